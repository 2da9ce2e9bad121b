"""The metaqueue store on SQLite and PostgreSQL: submit checks, readiness, claim, leases, failure cascade."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metasched.policy.claim import FreeResources
from metasched.runtime.metaqueue.store import HEAD_REVISION, MIGRATIONS, JobSpec, Store, StoreError

ONE = FreeResources(cpus=1)


def spec(name: str, *after: str, **kw: object) -> JobSpec:
    return JobSpec(command=f"echo {name}", name=name, after=list(after), **kw)  # type: ignore[arg-type]


def test_head_revision_matches_migrations() -> None:
    from alembic.config import Config
    from alembic.script import ScriptDirectory

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    assert ScriptDirectory.from_config(cfg).get_current_head() == HEAD_REVISION


def test_reopen_keeps_jobs(db_url: str) -> None:
    s = Store.open(db_url)
    s.submit([spec("a")])
    s.close()
    s2 = Store.open(db_url)
    assert [j["name"] for j in s2.jobs()] == ["a"]
    s2.close()


def test_unknown_dependency_refused_naming_it(store: Store) -> None:
    with pytest.raises(StoreError, match="unknown dependencies: ghost, nope"):
        store.submit([spec("a", "nope"), spec("b", "a", "ghost")])
    assert store.jobs() == []  # all or nothing


def test_cycle_refused_naming_members(store: Store) -> None:
    with pytest.raises(StoreError, match="dependency cycle") as err:
        store.submit([spec("x", "y"), spec("y", "z"), spec("z", "x"), spec("w")])
    for name in ("x", "y", "z"):
        assert name in str(err.value)
    assert "w" not in str(err.value).split(":")[1]
    with pytest.raises(StoreError, match="cycle: s -> s"):
        store.submit([spec("s", "s")])


def test_duplicate_names_refused(store: Store) -> None:
    store.submit([spec("a")])
    with pytest.raises(StoreError, match="already in the metaqueue: a"):
        store.submit([spec("a")])
    with pytest.raises(StoreError, match="duplicate job name 'b'"):
        store.submit([spec("b"), spec("b")])


def test_dependency_order_and_wait_then_exit(store: Store) -> None:
    a, b, c = store.submit([spec("a"), spec("b", "a"), spec("c", "a", "b")], now=0)
    r = store.claim("s", "p1", ONE, now=1)
    assert r.action == "job" and [j.job_id for j in r.jobs] == [a]
    assert store.claim("s", "p2", ONE, now=1).action == "wait"  # b waits for a
    assert store.complete(a, "p1", 1, 0, now=2)
    r = store.claim("s", "p2", ONE, now=3)
    assert [j.job_id for j in r.jobs] == [b]
    assert store.claim("s", "p1", ONE, now=3).action == "wait"  # c waits for b
    assert store.complete(b, "p2", 1, 0, now=4)
    assert [j.job_id for j in store.claim("s", "p1", ONE, now=5).jobs] == [c]
    assert store.complete(c, "p1", 1, 0, now=6)
    assert store.claim("s", "p1", ONE, now=7).action == "exit"


def test_dependency_on_earlier_done_job(store: Store) -> None:
    (a,) = store.submit([spec("a")])
    store.claim("s", "p", ONE)
    store.complete(a, "p", 1, 0)
    (b,) = store.submit([spec("b", "a")])
    assert [j.job_id for j in store.claim("s", "p", ONE).jobs] == [b]


def test_failure_cascades_and_retry_requeues(store: Store) -> None:
    a, b, c, _d = store.submit([spec("a"), spec("b", "a"), spec("c", "b"), spec("d")])
    store.claim("s", "p", FreeResources(cpus=2), limit=2)
    assert store.complete(a, "p", 1, 3)
    states = {j["name"]: (j["state"], j["reason"]) for j in store.jobs()}
    assert states["a"] == ("failed", "exit code 3")
    assert states["b"] == ("dep_failed", "dependency a failed")
    assert states["c"] == ("dep_failed", "dependency a failed")
    assert states["d"][0] == "running"
    with pytest.raises(StoreError, match="job c depends on b"):
        store.retry(["c"])
    assert sorted(store.retry(["a"])) == [a, b, c]
    assert {j["name"]: j["state"] for j in store.jobs()}["b"] == "queued"
    assert [j.job_id for j in store.claim("s", "p2", ONE).jobs] == [a]
    # a submit after a failed job is dependency-failed at once
    store.cancel(["a"])
    (e,) = store.submit([spec("e", "b")])
    assert store.job(str(e))["state"] == "dep_failed"


def test_stale_completion_refused(store: Store) -> None:
    (a,) = store.submit([spec("a")])
    store.claim("s", "p1", ONE, now=0)
    assert store.expire_leases(now=100) == [a]  # lease 10 s
    r = store.claim("s", "p2", ONE, now=101)
    assert r.jobs[0].attempt == 2
    assert not store.complete(a, "p1", 1, 0, now=102)  # p1 lost it
    assert store.job("a")["state"] == "running"
    assert store.complete(a, "p2", 2, 0, now=103)


def test_heartbeat_keeps_lease_and_tells_what_is_held(store: Store) -> None:
    (a,) = store.submit([spec("a")])
    store.claim("s", "p1", ONE, now=0)
    assert store.heartbeat("p1", now=8) == {a: 1}
    assert store.expire_leases(now=15) == []  # renewed until 18
    assert store.expire_leases(now=19) == [a]
    assert store.heartbeat("p1", now=20) == {}


def test_heartbeat_with_holding_renews_exactly_what_is_held(store: Store) -> None:
    a, b, c, d = store.submit([spec("a"), spec("b"), spec("c"), spec("d", max_attempts=1)])
    assert [j.job_id for j in store.claim("s", "p1", FreeResources(cpus=4), limit=4, now=0).jobs] == [a, b, c, d]
    # p1 runs a; it dropped b unstarted (or never got it); it killed c and d itself (fenced).
    held = store.heartbeat("p1", now=5, holding=[(a, 1)], fenced=[(c, 1), (d, 1)])
    assert held == {a: 1}
    jobs = {j["name"]: j for j in store.jobs()}
    assert (jobs["a"]["state"], jobs["a"]["attempts"]) == ("running", 1)
    assert (jobs["b"]["state"], jobs["b"]["attempts"]) == ("queued", 0)  # never started: not counted
    assert (jobs["c"]["state"], jobs["c"]["attempts"]) == ("queued", 1)  # a lost lease: counted
    assert jobs["d"]["state"] == "failed" and "retry limit" in jobs["d"]["reason"]
    assert store.expire_leases(now=14) == []  # a renewed until 15
    # a wrong attempt is not held: the placeholder's run is stale, the job goes back uncounted
    assert store.heartbeat("p1", now=14, holding=[(a, 2)]) == {}
    assert (store.job("a")["state"], store.job("a")["attempts"]) == ("queued", 0)
    # another placeholder's fenced claim touches nothing of others
    (e,) = [j.job_id for j in store.claim("s", "p2", ONE, now=20).jobs]
    assert store.heartbeat("p1", now=21, holding=[], fenced=[(e, 1)]) == {}
    assert store.job(str(e))["state"] == "running"


def test_grace_extends_leases_that_ended_while_no_server_ran(store: Store) -> None:
    (a,) = store.submit([spec("a")])
    store.claim("s", "p1", ONE, now=0)  # lease until 10
    assert store.grant_grace(now=30) == 1  # the server was down from 5 to 30: until 40
    assert store.expire_leases(now=39) == []
    assert store.heartbeat("p1", now=39, holding=[(a, 1)]) == {a: 1}
    assert store.grant_grace(now=40) == 1 and store.expire_leases(now=49.5) == []
    assert store.expire_leases(now=50.5) == [a]


def test_retry_limit_fails_job(store: Store) -> None:
    store.submit([spec("a", max_attempts=2), spec("b", "a")])
    for attempt in (1, 2):
        r = store.claim("s", f"p{attempt}", ONE, now=attempt * 100)
        assert r.jobs[0].attempt == attempt
        store.expire_leases(now=attempt * 100 + 50)
    assert store.job("a")["state"] == "failed"
    assert "retry limit" in store.job("a")["reason"]
    assert store.job("b")["state"] == "dep_failed"


def test_resources_and_wall_time_respected(store: Store) -> None:
    store.submit([spec("big", cpus=4), spec("long", time_s=600), spec("small")])
    r = store.claim("s", "p", FreeResources(cpus=2, remaining_s=60), limit=5)
    assert [j.name for j in r.jobs] == ["small"]
    r = store.claim("s", "p2", FreeResources(cpus=8, remaining_s=None), limit=5)
    assert [j.name for j in r.jobs] == ["big", "long"]


def test_licences_limited_per_site(store: Store) -> None:
    store.upsert_site("s", "local", {}, {"matlab": 1})
    store.submit([spec("m1", licences={"matlab": 1}), spec("m2", licences={"matlab": 1})])
    assert [j.name for j in store.claim("s", "p", FreeResources(cpus=4), limit=4).jobs] == ["m1"]
    assert store.claim("s", "p2", FreeResources(cpus=4), limit=4).action == "wait"
    assert store.claim("other", "p3", FreeResources(cpus=4), limit=4).action == "wait"  # no licence there


def test_concurrent_claims_hand_each_job_once(db_url: str) -> None:
    s = Store.open(db_url)
    n = 120
    s.submit([spec(f"j{i}") for i in range(n)])
    got: list[int] = []
    lock = threading.Lock()

    def worker(k: int) -> None:
        local = Store(s.engine)
        while True:
            r = local.claim("s", f"p{k}", ONE, limit=3)
            if r.action != "job":
                return
            with lock:
                got.extend(j.job_id for j in r.jobs)

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(worker, range(8)))
    assert sorted(got) == sorted(j["id"] for j in s.jobs())
    assert len(got) == n
    s.close()


@settings(max_examples=25, deadline=None)
@given(st.lists(st.lists(st.integers(0, 30), max_size=3), min_size=1, max_size=25), st.randoms())
def test_random_dags_run_in_dependency_order(parents: list[list[int]], rnd: object) -> None:
    """Property: on a random DAG, with random completion order, no job is claimed before its deps are done."""
    import random
    import tempfile

    assert isinstance(rnd, random.Random)
    specs = [spec(f"n{i}", *sorted({f"n{p % i}" for p in ps}) if i else ()) for i, ps in enumerate(parents)]
    with tempfile.TemporaryDirectory() as d:
        s = Store.open(f"sqlite:///{d}/q.db")
        s.submit(specs)
        deps = {sp.name: set(sp.after) for sp in specs}
        done: set[str] = set()
        running: list[tuple[int, str, int]] = []
        while True:
            r = s.claim("s", "p", FreeResources(cpus=3), limit=rnd.randint(1, 3))
            for j in r.jobs:
                assert j.name is not None and deps[j.name] <= done
                running.append((j.job_id, j.name, j.attempt))
            if r.action == "exit":
                break
            rnd.shuffle(running)
            jid, name, att = running.pop()
            assert s.complete(jid, "p", att, 0)
            done.add(name)
        assert done == set(deps)
        s.close()
