"""``metasched replay``: a history made under FCFS, replayed under FCFS, is reproduced; other policies are compared."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.runtime.lockstep import play
from tests.runtime.test_one_policy_two_drivers import workload
from typer.testing import CliRunner

from metasched.cli.main import app
from metasched.policy.claim import FcfsClaim
from metasched.runtime.metaqueue.history import max_concurrent, read_history
from metasched.runtime.metaqueue.store import Store
from metasched.sim.claimsim import PlaceholderSite, simulate_claims


def test_max_concurrent() -> None:
    assert max_concurrent([(0, 10), (5, 6), (6, 8), (10, 11)]) == 2
    assert max_concurrent([]) == 0


def test_replay_reproduces_fcfs_and_names_the_best(tmp_path: Path) -> None:
    jobs = workload(3, 40)
    sites = [PlaceholderSite("A", 2), PlaceholderSite("B", 2)]
    sched, claims = simulate_claims(jobs, sites, FcfsClaim(), record=True)
    url = f"sqlite:///{tmp_path / 'q.db'}"
    store = Store.open(url, lease_s=1e9)
    play(store, jobs, sites, sched, claims)
    hist = read_history(store)
    assert hist.placeholder_starts == {"A": [0.0, 0.0], "B": [0.0, 0.0]}
    assert {j.job_id: j.attrs["after"] for j in hist.jobs} == {j.job_id: j.attrs["after"] for j in jobs}
    store.close()

    out = tmp_path / "out"
    res = CliRunner().invoke(
        app, ["replay", "--from-db", url, "--out", str(out), "--policy", "fcfs", "--policy", "completion-time"]
    )
    assert res.exit_code == 0, res.output
    summary = json.loads((out / "summary.json").read_text())
    span = float(sched.end_time.max())
    assert summary["observed"]["makespan"] == pytest.approx(span)
    assert summary["fcfs"]["makespan"] == pytest.approx(span)  # the history's own policy reproduces it
    assert summary["fcfs"]["mean_response"] == pytest.approx(summary["observed"]["mean_response"])
    assert summary["completion-time"]["makespan"] < span
    best = min(("fcfs", "completion-time"), key=lambda k: summary[k]["mean_response"])
    assert f"Best mean turnaround: **{best}**" in (out / "summary.md").read_text()
    for name in ("summary.csv", "jobs_fcfs.csv", "jobs_observed.csv", "policies.png", "wait_cdf.png"):
        assert (out / name).stat().st_size > 0

    # another site set: one more site, three placeholders
    res = CliRunner().invoke(app, ["replay", "--from-db", url, "--out", str(tmp_path / "o2"), "--site", "C=3"])
    assert res.exit_code == 0, res.output
    assert "C (3 placeholders)" in (tmp_path / "o2" / "summary.md").read_text()
    bad = CliRunner().invoke(app, ["replay", "--from-db", url, "--out", str(tmp_path / "o3"), "--site", "C"])
    assert bad.exit_code != 0 and "NAME=COUNT" in bad.output


def test_replay_keeps_licence_limits(tmp_path: Path) -> None:
    """A history made under a global licence limit, replayed under FCFS with the same limits, is reproduced."""
    from tests.runtime.test_one_policy_two_drivers import licence_workload
    from tests.sim.test_claimsim_licences import peak_held

    jobs = licence_workload(3, 40)
    sites = [PlaceholderSite("A", 2, licences={"lm": 5, "lx": 1}), PlaceholderSite("B", 2)]
    glob = {"lm": 2}
    sched, claims = simulate_claims(jobs, sites, FcfsClaim(), record=True, licences=glob)
    assert peak_held(jobs, sched, "lm") == 2
    url = f"sqlite:///{tmp_path / 'q.db'}"
    store = Store.open(url, lease_s=1e9)
    play(store, jobs, sites, sched, claims, licences=glob)
    hist = read_history(store)
    assert hist.licences == glob and hist.site_licences == {"A": {"lm": 5, "lx": 1}, "B": {}}
    assert {j.job_id: j.attrs["licences"] for j in hist.jobs} == {j.job_id: j.attrs.get("licences", {}) for j in jobs}
    store.close()
    out = tmp_path / "out"
    res = CliRunner().invoke(app, ["replay", "--from-db", url, "--out", str(out), "--policy", "fcfs"])
    assert res.exit_code == 0, res.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["fcfs"]["makespan"] == pytest.approx(summary["observed"]["makespan"])
    assert summary["fcfs"]["mean_response"] == pytest.approx(summary["observed"]["mean_response"])
