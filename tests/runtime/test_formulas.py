"""User-given run-time formulas in the live metaqueue: preferred over learned estimates where they evaluate."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest
from typer.testing import CliRunner

from metasched.cli.main import app
from metasched.model.job import Job
from metasched.policy.claim import ClaimPolicy, ClaimWorld, FcfsClaim, FreeResources
from metasched.runtime.metaqueue.store import JobSpec, Store, StoreError
from metasched.runtime.metaqueue.workflow import parse_params, spec_from_mapping
from tests.runtime.lockstep import FixedEstimates


class Seen(ClaimPolicy):
    """FCFS that keeps the ready jobs it was shown."""

    key = "seen"

    def __init__(self) -> None:
        self.shown: list[Job] = []

    def select(
        self,
        ready: Sequence[Job],
        site: str,
        free: FreeResources,
        now: float,
        limit: int = 1,
        world: ClaimWorld | None = None,
    ) -> list[int]:
        self.shown = list(ready)
        return FcfsClaim().select(ready, site, free, now, limit, world)


def test_formula_is_preferred_where_it_evaluates(db_url: str) -> None:
    learned = FixedEstimates({("sim", "A"): 50.0, ("sim", "B"): 80.0, ("prep", "A"): 7.0})
    spy = Seen()
    store = Store.open(db_url, policy=spy, estimates=learned, lease_s=1e9)
    store.set_formula("sim", "0.5 * n**2 + 2")  # every site
    store.set_formula("sim", "n * m", site="B")  # B's own, preferred there
    store.submit(
        [
            JobSpec("true", name="sim-1", params={"n": 4, "m": 3}),
            JobSpec("true", name="sim-2", params={"n": 2}),  # lacks m: B keeps the learned value
            JobSpec("true", name="sim-3"),  # no parameters: learned everywhere
            JobSpec("true", name="prep-1", params={"n": 9}),  # no formula for prep
            JobSpec("true", name="sim-4", params={"n": 3, "m": 1}, time_s=60),  # the user's --time stays the limit
        ],
        now=0,
    )
    store.claim("A", "a0", FreeResources(8), limit=8, now=1)
    tables = {j.job_id: (j.attrs["estimates"], j.requested_time) for j in spy.shown}
    assert tables[1] == ({"A": 10.0}, 10.0)
    assert tables[2] == ({"A": 4.0}, 4.0)
    assert tables[3] == ({"A": 50.0}, 50.0)
    assert tables[4] == ({"A": 7.0}, 7.0)
    assert tables[5] == ({"A": 6.5}, 60.0)
    store.close()


def test_formula_tables_at_two_sites(tmp_path: Path) -> None:
    learned = FixedEstimates({("sim", "A"): 50.0, ("sim", "B"): 80.0})
    spy = Seen()
    spy.needs_world = True  # type: ignore[misc]
    store = Store.open(f"sqlite:///{tmp_path / 'q.db'}", policy=spy, estimates=learned, lease_s=1e9)
    store.add_placeholder("a0", "A", None, now=0)
    store.placeholder_started("a0", "A", "h", now=0)
    store.set_formula("sim", "0.5 * n**2 + 2")
    store.set_formula("sim", "n * m", site="B")
    store.submit(
        [JobSpec("true", name="sim-1", params={"n": 4, "m": 3}), JobSpec("true", name="sim-2", params={"n": 2})]
    )
    store.claim("B", "b0", FreeResources(1), now=1)
    tables = {j.job_id: j.attrs["estimates"] for j in spy.shown}
    assert tables == {1: {"A": 10.0, "B": 12.0}, 2: {"A": 4.0, "B": 80.0}}
    # removing B's formula: the one for every site applies there too (seen at once in this process)
    store.set_formula("sim", None, site="B")
    store.claim("B", "b0", FreeResources(1), now=2)
    assert {j.job_id: j.attrs["estimates"] for j in spy.shown} == {2: {"A": 4.0, "B": 4.0}}
    store.close()


def test_bad_formulas_and_params_are_refused(tmp_path: Path) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 'q.db'}")
    with pytest.raises(StoreError, match="only these functions"):
        store.set_formula("sim", "__import__('os').getcwd()")
    with pytest.raises(StoreError, match="identifier"):
        store.submit([JobSpec("true", params={"n-1": 3})])
    with pytest.raises(StoreError, match="finite number"):
        store.submit([JobSpec("true", params={"n": float("nan")})])
    assert parse_params(["n=3", "size = 2.5"]) == {"n": 3.0, "size": 2.5}
    with pytest.raises(StoreError, match="NAME=NUMBER"):
        parse_params(["n"])
    with pytest.raises(StoreError, match="must be a number"):
        parse_params({"n": "big"})
    spec = spec_from_mapping({"name": "sim-1", "command": "true", "params": {"n": 10}}, 0)
    assert spec.params == {"n": 10.0}
    store.close()


def test_formula_error_on_finished_runs_and_cli(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'q.db'}"
    run = CliRunner()
    for n in (1, 2, 4):
        res = run.invoke(app, ["submit", "--db", url, "--name", f"sim-{n}", "--param", f"n={n}", "--", "true"])
        assert res.exit_code == 0, res.output
    res = run.invoke(app, ["formula", "set", "sim", "10 * n", "--db", url])
    assert res.exit_code == 0, res.output
    assert run.invoke(app, ["formula", "set", "sim", "n.real", "--db", url]).exit_code == 2
    store = Store.open(url, lease_s=1e9)
    # measured: 10, 30, 40 s for n = 1, 2, 4 -> formula 10, 20, 40: errors 0, 1/3, 0
    for n, run_s in ((1, 10.0), (2, 30.0), (4, 40.0)):
        (job,) = store.claim("A", "a0", FreeResources(1), now=0).jobs
        assert job.name == f"sim-{n}"
        assert store.complete(job.job_id, "a0", job.attempt, 0, start_at=0, end_at=run_s, now=run_s)
    store.submit([JobSpec("true", name="sim-9")], now=50)  # no parameter: counted as lacking
    (job,) = store.claim("A", "a0", FreeResources(1), now=51).jobs
    assert store.complete(job.job_id, "a0", job.attempt, 0, start_at=51, end_at=60, now=60)
    (f,) = store.formulas()
    assert f["runs"] == 3 and f["missing"] == 1 and f["error"] == pytest.approx(1 / 9)
    store.close()
    res = run.invoke(app, ["estimates", "--db", url])
    assert res.exit_code == 0 and "10 * n" in res.output and "11.1%" in res.output, res.output
    assert "runs+formula" in res.output
    res = run.invoke(app, ["formula", "list", "--db", url])
    assert "10 * n" in res.output
    assert run.invoke(app, ["formula", "unset", "sim", "--db", url]).exit_code == 0
    assert run.invoke(app, ["formula", "unset", "sim", "--db", url]).exit_code == 2


def test_ready_jobs_follow_newly_learned_estimates(tmp_path: Path) -> None:
    """The store reuses a ready job's snapshot across claims, but not across new estimates."""
    spy = Seen()
    store = Store.open(f"sqlite:///{tmp_path / 'q.db'}", policy=spy, lease_s=1e9, learn_every_s=0.0)
    store.submit([JobSpec("true", name="sim-1"), JobSpec("true", name="sim-2"), JobSpec("true", name="sim-3")], now=0)
    (job,) = store.claim("A", "a0", FreeResources(1), now=1).jobs
    assert [j.attrs["estimates"] for j in spy.shown] == [{}, {}, {}]
    assert store.complete(job.job_id, "a0", job.attempt, 0, start_at=1, end_at=11, now=11)
    store.claim("A", "a1", FreeResources(1), now=12)  # same asking site and sites: only the estimates changed
    shown = [(j.job_id, j.attrs["estimates"], j.requested_time) for j in spy.shown]
    assert shown == [
        (2, {"A": pytest.approx(10.0)}, pytest.approx(10.0)),
        (3, {"A": pytest.approx(10.0)}, pytest.approx(10.0)),
    ]
    store.close()
