"""Dependency kinds (afterok / afterany / afternotok, as sbatch --dependency) and arrays (issue 36 item 4).

Invariants: a dependent runs only when each dependency ended as its kind asks; one that can never be met
makes it ``dep_failed`` with a reason naming the dependency and what happened to it; an array with
``%k`` never has more than k elements running (checked from the store's event history)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metasched.policy.claim import FreeResources
from metasched.runtime.metaqueue.arrays import expand, parse_after, parse_array
from metasched.runtime.metaqueue.records import StoreError
from metasched.runtime.metaqueue.store import JobSpec, Store

ONE = FreeResources(1, 0, None)


def run(store: Store, exit_code: int, ph: str = "p") -> int:
    (job,) = store.claim("s", ph, ONE).jobs
    assert store.complete(job.job_id, ph, job.attempt, exit_code)
    return job.job_id


def state(store: Store, ref: str) -> tuple[str, str]:
    j = store.job(ref)
    return j["state"], j["reason"]


def spec(name: str, after: str = "") -> JobSpec:
    refs, kinds = parse_after(after)
    return JobSpec("true", name=name, after=refs, after_kinds=kinds)


@pytest.mark.parametrize(
    ("kind", "code", "expected"),
    [
        ("afterok", 0, ("queued", "")),
        ("afterok", 1, ("dep_failed", "dependency a failed")),
        ("afterany", 0, ("queued", "")),
        ("afterany", 1, ("queued", "")),
        ("afternotok", 1, ("queued", "")),
        ("afternotok", 0, ("dep_failed", "dependency a succeeded (afternotok)")),
    ],
)
def test_kind_decides_after_the_dependency_ends(store: Store, kind: str, code: int, expected: tuple) -> None:
    store.submit([spec("a"), spec("b", f"{kind}:a"), spec("c", "b")])
    assert run(store, code)
    assert state(store, "b") == expected
    if expected[0] == "queued":
        assert store.job("b")["pending_deps"] == 0  # ready now
        assert run(store, 0) == store.job("b")["id"]
    else:  # its own afterok dependent never runs either, naming the root
        assert state(store, "c") == ("dep_failed", expected[1])


def test_dependents_of_a_cancelled_job_say_so(store: Store) -> None:
    store.submit([spec("a"), spec("b", "a"), spec("c", "b"), spec("d", "afterany:a"), spec("e", "afternotok:a")])
    store.cancel(["a"])
    assert state(store, "b") == ("dep_failed", "dependency a was cancelled")
    assert state(store, "c") == ("dep_failed", "dependency a was cancelled")
    for ready in ("d", "e"):
        assert store.job(ready)["state"] == "queued" and store.job(ready)["pending_deps"] == 0


def test_submitting_after_an_ended_job(store: Store) -> None:
    store.submit([spec("a")])
    run(store, 3)
    store.submit([spec("ok", "a"), spec("any", "afterany:a"), spec("notok", "afternotok:a")])
    assert state(store, "ok") == ("dep_failed", "dependency a failed")
    assert store.job("any")["pending_deps"] == store.job("notok")["pending_deps"] == 0


@pytest.mark.parametrize(
    ("text", "match"),
    [("afterfoo:a", "afterok, afterany or afternotok"), ("afterok:", "afterok:NAME"), ("a,afterany:a", "twice")],
)
def test_bad_after_is_refused(text: str, match: str) -> None:
    with pytest.raises(StoreError, match=match):
        parse_after(text)


def test_parse_after_forms() -> None:
    assert parse_after("a,afterany:b:c,afternotok:7") == (["a", "b", "c", "7"], {"b": "any", "c": "any", "7": "notok"})


@pytest.mark.parametrize(
    ("text", "indices", "limit"),
    [("1-5", [1, 2, 3, 4, 5], None), ("0-10:5%2", [0, 5, 10], 2), ("3,7,1-2", [3, 7, 1, 2], None), ("4", [4], None)],
)
def test_parse_array(text: str, indices: list[int], limit: int | None) -> None:
    assert parse_array(text) == (indices, limit)


@pytest.mark.parametrize("text", ["", "5-1", "1-10:0", "1-3%0", "1-3%x", "a-b", "1,1", "1-200000"])
def test_bad_array_is_refused(text: str) -> None:
    with pytest.raises(StoreError, match="bad array"):
        parse_array(text)


def test_array_elements_carry_their_index(store: Store) -> None:
    ids = store.submit(expand(JobSpec("echo {index}", name="sweep", env={"X": "1"}), [3, 4]))
    rows = [store.job(str(i)) for i in ids]
    assert [(r["name"], r["command"], r["env"]) for r in rows] == [
        ("sweep_3", "echo 3", {"X": "1", "METASCHED_ARRAY_INDEX": "3"}),
        ("sweep_4", "echo 4", {"X": "1", "METASCHED_ARRAY_INDEX": "4"}),
    ]


@settings(max_examples=15, deadline=None)
@given(n=st.integers(1, 25), k=st.integers(1, 6), codes=st.lists(st.integers(0, 2), min_size=25, max_size=25))
def test_throttled_array_never_runs_more_than_k(
    tmp_path_factory: pytest.TempPathFactory, n: int, k: int, codes: list[int]
) -> None:
    """Claim greedily with many placeholders; at no instant are more than k elements running, and every
    element runs in the end, failures included (afterany)."""
    store = Store.open(f"sqlite:///{tmp_path_factory.mktemp('a') / 'mq.db'}")
    ids = store.submit(expand(JobSpec("true"), range(n), k))
    running: list = []
    ran = 0
    while True:
        for p in range(10):
            running += [(job, f"p{p}") for job in store.claim("s", f"p{p}", ONE, now=1).jobs]
        assert len(running) <= k
        if not running:
            break
        job, ph = running.pop(0)
        assert store.complete(job.job_id, ph, job.attempt, codes[ran], now=2)
        ran += 1
    assert ran == n
    assert {store.job(str(i))["state"] for i in ids} <= {"done", "failed"}
    store.close()
