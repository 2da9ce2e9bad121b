"""``metasched demo`` end to end on a tiny workload: real server, real placeholder processes, the simulator."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from typer.testing import CliRunner

from metasched.cli.demo import FACTOR, SITES, command, predict, summarise
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


def test_summarise_runs() -> None:
    runs = [
        {"makespan": m, "turnaround": t, "per_site": {"fast": 3, "slow": 1}} for m, t in ((10, 5), (12, 7), (14, 6))
    ]
    s = summarise(runs, {"makespan": 11.0, "turnaround": 6.6})
    assert s["makespan"] == 12 and s["makespan_sd"] == 2.0 and s["turnaround"] == 6.0
    assert s["makespan_err"] == pytest.approx(-1 / 12) and s["turnaround_err"] == pytest.approx(0.1)
    assert s["makespan_err_worst"] == pytest.approx(3 / 14) and s["splits"] == ["3/1"] * 3
    one = summarise(runs[:1], {"makespan": 10.0, "turnaround": 5.0})
    assert one["makespan_sd"] == 0.0 and one["makespan_err"] == 0.0


@pytest.mark.slow
def test_demo_runs_live(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", str(Path(__file__).resolve().parents[2] / "src"))
    out = tmp_path / "demo"
    args = ["demo", "--policy", "fcfs", "--policy", "completion-time", "--jobs", "4", "--base", "0.3", "--runs", "2"]
    res = CliRunner().invoke(app, [*args, "--placeholders", "1", "--out", str(out)])
    assert res.exit_code == 0, res.output
    rows = list(csv.DictReader((out / "demo.csv").open()))
    assert [r["policy"] for r in rows] == ["fcfs", "completion-time"]
    for r in rows:
        assert float(r["makespan_live"]) > 0 and float(r["makespan_predicted"]) > 0
        assert r["runs"] == "2" and float(r["makespan_live_sd"]) >= 0
        assert [sum(int(x) for x in split.split("/")) for split in r["jobs_fast_slow"].split()] == [4, 4]
    runs = list(csv.DictReader((out / "demo_runs.csv").open()))
    assert [(r["policy"], r["run"]) for r in runs] == [
        ("fcfs", "1"),
        ("fcfs", "2"),
        ("completion-time", "1"),
        ("completion-time", "2"),
    ]
    assert "± " in (out / "demo.md").read_text()
    assert (out / "demo.png").stat().st_size > 0
