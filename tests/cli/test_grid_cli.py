"""``metasched simulate --sites/--platform``, ``metasched platforms`` and ``metasched policies`` end to end."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from metasched.cli.main import app

runner = CliRunner()

SITES = """
[sites.big]
procs = 64
scheduler = "conservative"
adapter = "slurm"
queue = "batch"

[sites.slow]
procs = 32
speed = 2.0
scheduler = "conservative"

[sites.small]
procs = 16
speed = { default = 0.8 }
scheduler = "conservative"
"""


def _swf(path: Path, n: int = 60) -> Path:
    lines = ["; MaxProcs: 64"]
    for i in range(1, n + 1):
        run = 50 + (i * 37) % 400
        procs = 1 + (i * 5) % 16
        lines.append(f"{i} {i * 20} -1 {run} {procs} -1 -1 {procs} {run + 100} -1 1 1 1 {i % 3} 1 {1 + i % 3} -1 -1")
    path.write_text("\n".join(lines) + "\n")
    return path


# Long: in a fresh install its worker processes compile the multi-site event loop (numba, cached on disk
# afterwards): about a minute of CPU each, several on a loaded CI machine.
@pytest.mark.timeout(1200)
def test_simulate_sites_writes_every_output_and_compares(tmp_path: Path) -> None:
    (tmp_path / "sites.toml").write_text(SITES)
    trace = _swf(tmp_path / "t.swf")
    out = tmp_path / "out"
    # As a user runs it: its own process (two policies in parallel, so it starts worker processes: never
    # from inside a test runner's process, whose threads and pipes its children would share).
    res = subprocess.run(
        [
            sys.executable, "-m", "metasched", "simulate", "--sites", str(tmp_path / "sites.toml"),
            "--trace", str(trace), "--out", str(out),
            "--policy", "least-load", "--policy", "completion-time:k=2,choice=completion", "--workers", "2",
        ],
        capture_output=True, text=True, timeout=1100, env={**os.environ, "COLUMNS": "200"},
    )  # fmt: skip
    output = res.stdout + res.stderr
    assert res.returncode == 0, output
    assert "home sites from the partition field" in output and "no job kinds" in output
    for folder in ("least-load", "completion-time_k=2_choice=completion"):
        with (out / folder / "jobs.csv").open() as fh:
            rows = list(csv.DictReader(fh))
        assert len(rows) == 60
        for col in ("job_id", "submit_time", "start_time", "end_time", "procs", "site", "wait", "response",
                    "bounded_slowdown", "run_time"):  # fmt: skip
            assert col in rows[0]
        assert {r["site"] for r in rows} <= {"big", "slow", "small"}
        summary = json.loads((out / folder / "summary.json").read_text())
        assert summary["grid"]["jobs"] == 60 and set(summary["sites"]) == {"big", "slow", "small"}
        assert any("home sites from the partition field" in line for line in summary["workload"])
        for key in ("awrt", "mean_wait", "p95_wait", "mean_bounded_slowdown", "p95_bounded_slowdown",
                    "utilization", "effective_utilization", "messages"):  # fmt: skip
            assert key in summary["grid"]
        with (out / folder / "jobs_batsim.csv").open() as fh:
            assert all(r["allocated_resources"] for r in csv.DictReader(fh))
        assert (out / folder / "gantt.png").stat().st_size > 0
    try:
        import pyarrow.parquet as pq
    except ImportError:
        pq = None
    if pq is not None:  # Parquet beside every CSV when pyarrow is installed
        table = pq.read_table(out / "least-load" / "jobs.parquet")
        assert (
            table.num_rows == 60
            and "allocated_resources" in pq.read_table(out / "least-load" / "jobs_batsim.parquet").column_names
        )
        assert (out / "compare.parquet").exists()
    with (out / "compare.csv").open() as fh:
        assert [r["policy"] for r in csv.DictReader(fh)] == ["least-load", "completion-time:k=2,choice=completion"]
    assert (out / "compare.png").stat().st_size > 0


def test_simulate_platform_preset_with_random_kinds(tmp_path: Path) -> None:
    res = runner.invoke(
        app,
        ["simulate", "--platform", "sabin2003", "--procs", "32", "--jobs", "200", "--policy", "k-reservations:k=2",
         "--home", "round-robin", "--no-gantt", "--out", str(tmp_path)],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "job kinds drawn uniformly from IS.8, MG.8, MG.256, LU.256 (seed 1)" in res.output
    summary = json.loads((tmp_path / "k-reservations_k=2" / "summary.json").read_text())
    assert summary["grid"]["jobs"] == 200 and summary["grid"]["procs"] == 128


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--platform", "nope"], "unknown platform 'nope'"),
        (
            ["--platform", "sabin2003", "--policy", "k-reservations:k=0"],
            "k must be >= 1, got '0', at --policy k-reservations.k",
        ),
        (["--platform", "sabin2003", "--policy", "bogus"], "unknown policy 'bogus'"),
        (["--platform", "sabin2003", "--kinds", "colour"], "unknown job-kind source 'colour'"),
        (["--platform", "sabin2003", "--policy", "load-ordering"], "seed 004"),
    ],
)
def test_bad_input_is_one_error_line(tmp_path: Path, args: list[str], words: str) -> None:
    res = runner.invoke(app, ["simulate", *args, "--jobs", "50", "--out", str(tmp_path)])
    assert res.exit_code == 2, res.output
    assert words in res.output and "Traceback" not in res.output
    assert res.output.strip().splitlines()[-1].startswith("error: ")


def test_bad_sites_file_names_file_and_key(tmp_path: Path) -> None:
    (tmp_path / "s.toml").write_text("[sites.a]\nprocs = 8\nspeed = 0\n")
    res = runner.invoke(app, ["simulate", "--sites", str(tmp_path / "s.toml"), "--jobs", "10", "--out", str(tmp_path)])
    assert res.exit_code == 2
    assert "s.toml: sites.a.speed" in res.output


def test_platforms_and_policies_list_everything() -> None:
    res = runner.invoke(app, ["platforms"], env={"COLUMNS": "250"})
    assert res.exit_code == 0 and "sabin2003" in res.output and "ernemann2002-m64" in res.output
    res = runner.invoke(app, ["platforms", "--schema"])
    assert json.loads(res.output)["properties"]["sites"]
    res = runner.invoke(app, ["platforms", "--show", "sabin2003"])
    assert "[sites.origin2000]" in res.output
    res = runner.invoke(app, ["policies"], env={"COLUMNS": "250"})
    for name in ("least-load", "k-reservations", "completion-time", "cancel-slower-only", "efficacy", "best-fit",
                 "multisite", "load-ordering"):  # fmt: skip
        assert name in res.output


def test_no_plot_and_no_gantt_leave_the_figures_out(tmp_path: Path) -> None:
    (tmp_path / "sites.toml").write_text(SITES)
    trace = _swf(tmp_path / "t.swf", n=20)
    out = tmp_path / "out"
    res = runner.invoke(
        app,
        ["simulate", "--sites", str(tmp_path / "sites.toml"), "--trace", str(trace), "--out", str(out),
         "--policy", "least-load", "--no-plot", "--no-gantt"],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    assert (out / "compare.csv").exists() and (out / "least-load" / "jobs.csv").exists()
    assert not (out / "compare.png").exists() and not (out / "least-load" / "gantt.png").exists()
