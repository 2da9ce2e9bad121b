"""``metasched demo`` end to end on a tiny workload: real server, real placeholder processes, the simulator."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from typer.testing import CliRunner

from metasched.cli.demo import FACTOR, SITES, command, predict
from metasched.cli.main import app


def test_command_slows_per_site() -> None:
    assert "fast) sleep 2.000;;" in command("a", 2.0) and "slow) sleep 6.000;;" in command("a", 2.0)
    assert FACTOR[("b", "slow")] == 1.2 and SITES == ("fast", "slow")


def test_prediction_prefers_the_heterogeneity_aware_policies() -> None:
    calib = {(k, s): 2.0 * FACTOR[(k, s)] for k in "ab" for s in SITES}
    starts = {s: [0.0, 0.0] for s in SITES}
    fcfs = predict("fcfs", 24, calib, starts)
    for key in ("efficacy", "completion-time"):
        p = predict(key, 24, calib, starts)
        assert p["makespan"] < fcfs["makespan"] and p["turnaround"] < fcfs["turnaround"]


@pytest.mark.slow
def test_demo_runs_live(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", str(Path(__file__).resolve().parents[2] / "src"))
    out = tmp_path / "demo"
    args = ["demo", "--policy", "fcfs", "--policy", "completion-time", "--jobs", "4", "--base", "0.3"]
    res = CliRunner().invoke(app, [*args, "--placeholders", "1", "--out", str(out)])
    assert res.exit_code == 0, res.output
    rows = list(csv.DictReader((out / "demo.csv").open()))
    assert [r["policy"] for r in rows] == ["fcfs", "completion-time"]
    for r in rows:
        assert float(r["makespan_live"]) > 0 and float(r["makespan_predicted"]) > 0
        assert sum(int(x) for x in r["jobs_fast_slow"].split("/")) == 4
    assert (out / "demo.png").stat().st_size > 0
