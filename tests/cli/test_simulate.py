"""``metasched simulate`` end to end on the generated default and on a tiny hand-made trace."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from metasched.cli.main import app
from metasched.workload.swf import iter_records, read_swf

runner = CliRunner()
DATA = Path(__file__).resolve().parents[1] / "data"


def test_simulate_generated_default_writes_every_output(tmp_path: Path) -> None:
    result = runner.invoke(app, ["simulate", "--jobs", "300", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "summary.csv").exists()
    assert (tmp_path / "wait_cdf.png").stat().st_size > 0
    with (tmp_path / "summary.csv").open() as fh:
        rows = {row["scheduler"]: row for row in csv.DictReader(fh)}
    assert set(rows) == {"fcfs", "easy", "conservative"}
    for key in rows:
        summary = json.loads((tmp_path / key / "summary.json").read_text())
        assert summary["jobs"] == 300
        back = read_swf(tmp_path / key / "schedule.swf")
        assert len(back.jobs) == 300
        with (tmp_path / key / "jobs.csv").open() as fh:
            jobs = list(csv.DictReader(fh))
        # the schedule written as SWF carries the wait times the simulator computed (field 3)
        waits = {int(row["job_id"]): float(row["wait"]) for row in jobs}
        written = {int(rec.fields[0]): rec.fields[2] for rec in iter_records(tmp_path / key / "schedule.swf")}
        assert written.keys() == waits.keys()
        for job_id, wait in waits.items():
            assert abs(written[job_id] - wait) < 1e-6


def test_simulate_same_input_same_output(tmp_path: Path) -> None:
    for name in ("a", "b"):
        result = runner.invoke(
            app, ["simulate", "--jobs", "200", "--scheduler", "easy,conservative", "--out", str(tmp_path / name)]
        )
        assert result.exit_code == 0, result.output
    for key in ("easy", "conservative"):
        assert (tmp_path / "a" / key / "jobs.csv").read_bytes() == (tmp_path / "b" / key / "jobs.csv").read_bytes()
        assert (tmp_path / "a" / key / "schedule.swf").read_bytes() == (
            tmp_path / "b" / key / "schedule.swf"
        ).read_bytes()


def test_simulate_unknown_scheduler_is_a_clear_error(tmp_path: Path) -> None:
    result = runner.invoke(app, ["simulate", "--scheduler", "nope", "--out", str(tmp_path)])
    assert result.exit_code != 0
    assert "unknown scheduler 'nope'" in result.output


def test_simulate_missing_trace_is_a_clear_error(tmp_path: Path) -> None:
    result = runner.invoke(app, ["simulate", "--trace", str(tmp_path / "none.swf"), "--out", str(tmp_path)])
    assert result.exit_code != 0
    assert "no such file" in result.output


def test_simulate_no_plot_and_parquet(tmp_path: Path) -> None:
    """``--no-plot`` leaves the figure out; ``--format parquet`` writes jobs.parquet in place of jobs.csv."""
    pytest.importorskip("pyarrow")
    result = runner.invoke(
        app,
        [
            "simulate",
            "--jobs",
            "200",
            "--scheduler",
            "easy",
            "--no-plot",
            "--format",
            "parquet",
            "--out",
            str(tmp_path),
        ],
    )
    assert result.exit_code == 0, result.output
    assert not (tmp_path / "wait_cdf.png").exists()
    assert (tmp_path / "easy" / "jobs.parquet").stat().st_size > 0 and not (tmp_path / "easy" / "jobs.csv").exists()


def test_simulate_unknown_format_is_a_clear_error(tmp_path: Path) -> None:
    result = runner.invoke(app, ["simulate", "--format", "xlsx", "--out", str(tmp_path)])
    assert result.exit_code == 2
    assert "unknown format 'xlsx'" in result.output
