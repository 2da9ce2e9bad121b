"""Learned run-time estimates per (kind, site): hand-worked values, borrowing, error, and their use in claims."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from metasched.policy.claim import FreeResources
from metasched.runtime.metaqueue.estimates import Estimates, job_kind
from metasched.runtime.metaqueue.store import JobSpec, Store


def test_job_kind() -> None:
    assert job_kind("sim-17", "x") == "sim"
    assert job_kind("render_003", "x") == "render"
    assert job_kind("merge", "x") == "merge"
    assert job_kind("42x7", "x") == "42x"
    assert job_kind(None, "./bin/sim --n 3") == "sim"


def test_geometric_mean_borrowing_and_error() -> None:
    est = Estimates([("a", "A", 10), ("a", "A", 40), ("a", "B", 60), ("b", "A", 5)])
    assert est.estimate("a", "A") == pytest.approx(20.0)  # sqrt(10 * 40)
    # b never ran at B: borrow b@A times the median ratio B/A over kinds run at both (a: 60/20 = 3)
    assert est.estimate("b", "B") == pytest.approx(15.0)
    assert est.estimate("c", "A") is None
    rows = {(r.kind, r.site): r for r in est.table()}
    # leave-one-out: predict 10 by 40 (error 3), 40 by 10 (error 0.75): mean 1.875
    assert rows[("a", "A")].error == pytest.approx(1.875) and rows[("a", "A")].runs == 2
    assert rows[("b", "B")].borrowed and rows[("b", "B")].error is None
    assert math.isclose(rows[("a", "B")].estimate_s, 60.0)


def test_store_learns_and_checks_remaining_wall_time(tmp_path: Path) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 'q.db'}", lease_s=1e9, learn_every_s=0.0)
    store.submit([JobSpec("true", name="sim-1"), JobSpec("true", name="sim-2")], now=0.0)
    (j,) = store.claim("A", "p", FreeResources(1), now=0.0).jobs
    store.complete(j.job_id, "p", 1, 0, start_at=0.0, end_at=100.0, now=100.0)
    assert store.estimates().estimate("sim", "A") == pytest.approx(100.0)
    # sim-2 has no --time: its learned 100 s at A do not fit 50 s of remaining wall time
    assert store.claim("A", "p", FreeResources(1, remaining_s=50.0), now=101.0).action == "wait"
    assert [c.name for c in store.claim("A", "p", FreeResources(1, remaining_s=150.0), now=102.0).jobs] == ["sim-2"]
    store.close()


def test_store_feeds_deadline_and_user_class_to_pasquali(tmp_path: Path) -> None:
    from metasched.policy.claim import PasqualiClaim
    from metasched.runtime.metaqueue.records import StoreError

    store = Store.open(f"sqlite:///{tmp_path / 'q.db'}", policy=PasqualiClaim(), lease_s=1e9)
    store.submit(
        [
            JobSpec("true", name="plain", time_s=10),
            JobSpec("true", name="gold", user_class="gold", time_s=10),
            # deadline 25 s after submission, 10 s long, k = 2: on the ramp at t=0 -> urgency 2.5 > gold's 2
            JobSpec("true", name="urgent", deadline_s=25, time_s=10),
        ],
        now=0.0,
    )
    got = [c.name for c in store.claim("A", "p", FreeResources(3), limit=3, now=0.0).jobs]
    assert got == ["urgent", "gold", "plain"]
    assert store.job("urgent")["deadline_at"] == 25.0 and store.job("gold")["user_class"] == "gold"
    with pytest.raises(StoreError, match="user class"):
        store.submit([JobSpec("true", user_class="platinum")])
    store.close()


@given(
    st.lists(
        st.tuples(st.sampled_from(["a", "b"]), st.sampled_from(["A", "B", "C"]), st.floats(0.01, 1e4)),
        max_size=12,
    ),
    st.integers(0, 12),
)
def test_extended_learns_as_one_learning_of_all_runs(runs: list[tuple[str, str, float]], cut: int) -> None:
    old = Estimates(runs[:cut])
    before = {(k, s): old.estimate(k, s) for k in "ab" for s in "ABC"}
    grown = old.extended(runs[cut:])
    whole = Estimates(runs)
    for k in "ab":
        for s in "ABC":
            a, b = grown.estimate(k, s), whole.estimate(k, s)
            assert (a is None) == (b is None) and (a is None or math.isclose(a, b, rel_tol=1e-9))
            assert old.estimate(k, s) == before[(k, s)]  # the old object is unchanged
    assert len(grown) == len(whole)


def test_store_learns_incrementally_from_runs_done_between_looks(db_url: str) -> None:
    store = Store.open(db_url, lease_s=1e9, learn_every_s=0.0)
    store.submit([JobSpec("true", name=f"sim-{i}") for i in range(3)], now=0.0)
    for i, run_s in enumerate([10.0, 40.0]):
        (j,) = store.claim("A", "p", FreeResources(1), now=0.0).jobs
        assert store.complete(j.job_id, "p", j.attempt, 0, start_at=0.0, end_at=run_s, now=run_s)
        first = store.estimates()
        assert first.estimate("sim", "A") == pytest.approx([10.0, 20.0][i])  # geometric mean of the runs so far
    assert store.estimates() is first  # nothing new: the same object (the ready-job cache keys on it)
    # a failed run teaches nothing
    (j,) = store.claim("A", "p", FreeResources(1), now=0.0).jobs
    store.complete(j.job_id, "p", j.attempt, 1, start_at=0.0, end_at=1000.0, now=1000.0)
    assert store.estimates().estimate("sim", "A") == pytest.approx(20.0)
    store.close()
