"""The two-level driver on tiny hand-worked cases; the generator; registries; the experiment."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

import metasched.policy.local as local_pkg
import metasched.policy.meta as meta_pkg
import metasched.policy.priority as prio_pkg
from metasched.experiments.pasquali2010 import Pasquali2010Config, run
from metasched.model.qos import qos_of
from metasched.policy.local.flexible import FlexibleBackfill
from metasched.policy.meta.two_level import LoadOrdering
from metasched.policy.priority.arrival import ArrivalOrder
from metasched.sim.two_level import run_case, simulate_two_level
from metasched.sim.two_level_metrics import cluster_metrics
from metasched.workload.pasquali import PasqualiParams, generate_grid, generate_jobs

from .helpers import cluster, job


def test_hand_worked_single_cluster() -> None:
    # One machine of 4 CPUs, bench 200. Jobs estimated on bench 100 run half as long here.
    cl = cluster([(4, 200.0)])
    jobs = [
        job(0, submit=0.0, cpus=4, estimate=100.0),  # 0 -> 50
        job(1, submit=0.0, cpus=2, estimate=40.0, deadline=60.0),  # waits: 50 -> 70, misses 60
        job(2, submit=10.0, cpus=2, estimate=400.0),  # 50 -> 250
    ]
    res = simulate_two_level(jobs, [cl], LoadOrdering(heuristics=()), FlexibleBackfill(order=ArrivalOrder()))
    assert res.start.tolist() == [0.0, 50.0, 50.0]
    assert res.end.tolist() == [50.0, 70.0, 250.0]
    rows = cluster_metrics(res)
    assert rows[0]["missed_deadline"] == 1 and rows[0]["missed_deadline_pct"] == 100.0
    # No-deadline jobs: (0 + 50)/50 = 1 and (40 + 200)/200 = 1.2 -> 1.1.
    assert rows[0]["slowdown_no_deadline"] == pytest.approx(1.1)
    # CPU usage: [0,50): 4 active / min(4, 4+2) = 1 (job 2 queued from 10); [50,70): 4/4; [70,250): 2/min(4,2) = 1.
    assert rows[0]["cpu_usage_pct"] == pytest.approx(100.0)


def test_ms_dispatch_balances_queued_load() -> None:
    # Two identical one-machine clusters, all jobs at t = 0: job 0 -> first idle (A), job 1 -> B
    # (idle), then Load and Ordering tie and the seeded draw decides, one job each.
    cls = [cluster([(1, 100.0)], name="A"), cluster([(1, 100.0)], name="B")]
    jobs = [job(i, cpus=1, estimate=10.0) for i in range(4)]
    res = simulate_two_level(jobs, cls, LoadOrdering(heuristics=()), FlexibleBackfill(order=ArrivalOrder()))
    assert res.cluster.tolist()[:2] == [0, 1] and sorted(res.cluster.tolist()[2:]) == [0, 1]
    assert sorted(res.end.tolist()) == [10.0, 10.0, 20.0, 20.0]


def test_job_that_fits_no_cluster() -> None:
    with pytest.raises(ValueError, match="fits no cluster"):
        run_case("ms", [job(0, cpus=9)], [cluster([(8, 100.0)])])


def test_generator_seeded_and_in_range() -> None:
    p = PasqualiParams(n_jobs=400, mean_interarrival_s=5.0)
    grid = generate_grid(p, np.random.default_rng(1))
    a = generate_jobs(p, grid, np.random.default_rng(2))
    b = generate_jobs(p, grid, np.random.default_rng(2))
    assert [(j.submit_time, j.requested_procs, qos_of(j)) for j in a] == [
        (j.submit_time, j.requested_procs, qos_of(j)) for j in b
    ]
    assert [len(c.machines) for c in grid] == [120, 60, 30, 15]
    for c in grid:
        for lic in c.licences:
            assert 0.5 * len(c.machines) - 1 <= lic.copies <= 0.7 * len(c.machines) + 1
    for j in a:
        q = qos_of(j)
        assert 8000 <= j.requested_time <= 10000 and 4 <= j.requested_procs <= 32
        if q.deadline is not None:
            assert 1500 <= q.deadline - j.requested_time - j.submit_time <= 5500
        assert 0 <= q.n_licences <= 3
    no_deadline = sum(qos_of(j).deadline is None for j in a) / len(a)
    with_licence = sum(qos_of(j).n_licences > 0 for j in a) / len(a)
    assert 0.2 < no_deadline < 0.4 and 0.2 < with_licence < 0.4
    zero = generate_jobs(PasqualiParams(n_jobs=50, mean_interarrival_s=0.0), grid, np.random.default_rng(3))
    assert {j.submit_time for j in zero} == {0.0}
    with pytest.raises(ValueError, match="Ta"):
        PasqualiParams(mean_interarrival_s=-1.0)


def test_registries_list_every_module() -> None:
    assert set(meta_pkg.TWO_LEVEL_REGISTRY) == {"load-ordering"}
    assert set(local_pkg.MACHINE_REGISTRY) == {"flexible"}
    assert set(prio_pkg.MS_HEURISTICS) == {"ms-deadline", "ms-licences", "user-class"}
    assert set(prio_pkg.LS_HEURISTICS) == {"aging", "ls-deadline", "ls-licences", "wait-min"}
    assert set(prio_pkg.CLUSTER_ORDERS) == {"arrival", "ms-priority", "ls-heuristics"}


def test_experiment_writes_outputs(tmp_path: Path) -> None:
    cfg = Pasquali2010Config(
        tas=(0.0, 5.0), repetitions=2, workers=1, params=PasqualiParams(n_jobs=120, cluster_sizes=(8, 4, 2, 1))
    )
    done = []
    rows, timings = run(cfg, tmp_path, progress=done.append)
    assert len(done) == 12 and len(timings) == 12
    for name in (
        "clusters.csv",
        "timing.csv",
        "fig3_workload_share.png",
        "fig4_slowdown_deadlines.png",
        "fig5_usage.png",
        "fig3_workload_share.csv",
        "summary.md",
    ):
        assert (tmp_path / name).stat().st_size > 0, name
    with (tmp_path / "clusters.csv").open() as fh:
        assert len(list(csv.DictReader(fh))) == 12 * 5
    text = (tmp_path / "summary.md").read_text()
    assert "| id | claim | paper | ours | holds if ours is | verdict |" in text
    shares = [
        r["workload_share"]
        for r in rows
        if r["cluster"] != "all" and r["rep"] == 0 and r["ta"] == 0.0 and r["case"] == "ms"
    ]
    assert sum(shares) == pytest.approx(1.0)


def test_cli_smoke(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from metasched.cli.main import app

    args = ["experiment", "pasquali2010", "--out", str(tmp_path), "--ta", "5", "--case", "none", "--case", "ms"]
    result = CliRunner().invoke(app, [*args, "--repetitions", "1", "--jobs", "60", "--workers", "1"])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "summary.md").exists()
    bad = CliRunner().invoke(app, [*args, "--focus-ta", "7", "--jobs", "10"])
    assert bad.exit_code != 0 and "focus_ta" in bad.output


def test_every_two_level_policy_module_is_registered() -> None:
    import importlib
    import inspect
    import pkgutil

    from metasched.policy.meta.two_level_base import (
        ClusterOrder,
        LsHeuristic,
        MachineScheduler,
        MsHeuristic,
        TwoLevelDispatcher,
    )

    registries = {
        MsHeuristic: prio_pkg.MS_HEURISTICS,
        LsHeuristic: prio_pkg.LS_HEURISTICS,
        ClusterOrder: prio_pkg.CLUSTER_ORDERS,
        MachineScheduler: local_pkg.MACHINE_REGISTRY,
        TwoLevelDispatcher: meta_pkg.TWO_LEVEL_REGISTRY,
    }
    for pkg in (prio_pkg, local_pkg, meta_pkg):
        for info in pkgutil.iter_modules(pkg.__path__):
            module = importlib.import_module(f"{pkg.__name__}.{info.name}")
            for _, cls in inspect.getmembers(module, inspect.isclass):
                if cls.__module__ != module.__name__ or inspect.isabstract(cls):
                    continue
                for base, registry in registries.items():
                    if issubclass(cls, base):
                        assert registry.get(cls.key) is cls, f"{cls.__name__} missing from its registry"
