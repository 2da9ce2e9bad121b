"""describe() on hand-worked workloads, and the ``metasched trace info`` command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from metasched.cli.main import app
from metasched.model import Job
from metasched.workload.generate import synthetic
from metasched.workload.info import describe, quantile, width_bucket
from metasched.workload.swf import read_swf


def test_width_bucket_labels() -> None:
    assert [width_bucket(w) for w in (1, 2, 3, 4, 5, 8, 9, 16, 17, 338)] == [
        "1", "2", "3-4", "3-4", "5-8", "5-8", "9-16", "9-16", "17-32", "257-512",
    ]  # fmt: skip


def test_quantile_nearest_rank() -> None:
    vals = [1.0, 2.0, 3.0, 4.0]
    assert [quantile(vals, q) for q in (0.1, 0.25, 0.5, 0.75, 0.99)] == [1, 1, 2, 3, 4]


def test_describe_tiny_fixture(data_dir: Path) -> None:
    d = describe(read_swf(data_dir / "swf_tiny.swf"))
    # kept: (submit, procs, run, est) = (0,4,100,200) (10,8,200,200) (20,2,50,50) (40,1,0,1) (40,16,7.5,7.5)
    assert (d["records"], d["jobs"], d["procs"]) == (7, 5, 16)
    assert d["dropped"] == {"unknown run time": 1, "no processors": 1}
    assert d["span_s"] == 40
    work = 4 * 100 + 8 * 200 + 2 * 50 + 0 + 16 * 7.5
    assert d["total_work"] == work
    assert d["offered_load"] == pytest.approx(work / (16 * 40))
    assert d["width_histogram"] == {"1": 1, "2": 1, "3-4": 1, "5-8": 1, "9-16": 1}
    assert d["serial_fraction"] == 0.2
    assert d["power_of_two_fraction"] == 1.0
    assert d["run_time"]["p50"] == 50
    assert d["run_time"]["max"] == 200
    assert d["estimate_accuracy"]["exact_fraction"] == pytest.approx(3 / 5)  # jobs 2, 3, 7
    assert d["estimate_accuracy"]["median"] == 1.0
    assert d["estimate_accuracy"]["overrun_fraction"] == 0


def test_describe_empty() -> None:
    d = describe([])
    assert d["jobs"] == 0 and d["offered_load"] is None and d["width_histogram"] == {}


def test_describe_job_list_uses_widest_as_machine() -> None:
    d = describe([Job(1, 0.0, 10.0, 10.0, 2), Job(2, 10.0, 10.0, 20.0, 4)])
    assert d["procs"] == 4
    assert d["offered_load"] == pytest.approx((20 + 40) / (4 * 10))


def test_cli_trace_info(data_dir: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(app, ["trace", "info", str(data_dir / "swf_tiny.swf")])
    assert result.exit_code == 0, result.output
    assert "unknown run time" in result.output and "9-16" in result.output
    result = runner.invoke(app, ["trace", "info", "--json", str(data_dir / "swf_tiny.swf")])
    assert result.exit_code == 0
    assert json.loads(result.output)["jobs"] == 5


def test_cli_trace_info_error_names_line(data_dir: Path) -> None:
    result = CliRunner().invoke(app, ["trace", "info", str(data_dir / "swf_bad_non_numeric.swf")])
    assert result.exit_code == 2
    assert "swf_bad_non_numeric.swf:3" in result.output


@pytest.mark.parametrize("kind", ["synthetic", "ctc"])
def test_cli_trace_generate_is_deterministic(tmp_path: Path, kind: str) -> None:
    runner = CliRunner()
    outs = [tmp_path / f"{kind}{i}.swf" for i in range(2)]
    for out in outs:
        result = runner.invoke(app, ["trace", "generate", str(out), "--kind", kind, "--jobs", "200", "--seed", "4"])
        assert result.exit_code == 0, result.output
    assert outs[0].read_bytes() == outs[1].read_bytes()
    w = read_swf(outs[0])
    assert len(w.jobs) == 200 and w.dropped == {}
    assert w.max_procs == (256 if kind == "synthetic" else 338)
    if kind == "synthetic":
        assert w.jobs == synthetic(200, 256, seed=4)


def test_cli_trace_generate_rejects_unknown_kind(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["trace", "generate", str(tmp_path / "x.swf"), "--kind", "nope"])
    assert result.exit_code == 2
    assert "unknown kind" in result.output
