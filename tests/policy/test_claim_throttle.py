"""Claim policies and placeholder throttles: hand-built snapshots, exact decisions, invariants."""

from __future__ import annotations

import pkgutil

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import metasched.policy.claim as claim_pkg
import metasched.policy.throttle as throttle_pkg
from metasched.model.job import Job
from metasched.policy.claim import REGISTRY as CLAIMS
from metasched.policy.claim import FcfsClaim, FreeResources
from metasched.policy.throttle import REGISTRY as THROTTLES
from metasched.policy.throttle import TrellisThrottle


def job(i: int, cpus: int = 1, submit: float = 0.0, time_s: float = 0.0, mem: int = 0, lic: dict | None = None) -> Job:
    return Job(
        job_id=i,
        submit_time=submit,
        run_time=time_s,
        requested_time=time_s,
        requested_procs=cpus,
        attrs={"mem_mb": mem, "licences": lic or {}},
    )


@pytest.mark.parametrize(("pkg", "registry"), [(claim_pkg, CLAIMS), (throttle_pkg, THROTTLES)])
def test_registries_list_every_module(pkg: object, registry: dict) -> None:
    modules = {m.name for m in pkgutil.iter_modules(pkg.__path__)} - {"base"}  # type: ignore[attr-defined]
    assert {cls.__module__.rsplit(".", 1)[1] for cls in registry.values()} == modules


def test_fcfs_first_fit_in_arrival_order() -> None:
    ready = [job(3, submit=5), job(1, cpus=4, submit=1), job(2, submit=1), job(4, submit=5, time_s=100)]
    p = FcfsClaim()
    assert p.select(ready, "s", FreeResources(cpus=2), now=0, limit=5) == [2, 3]  # 1 too wide, 4 after 3
    assert p.select(ready, "s", FreeResources(cpus=8, remaining_s=50), now=0, limit=5) == [1, 2, 3]  # 4 too long
    assert p.select(ready, "s", FreeResources(cpus=8), now=0, limit=2) == [1, 2]
    assert p.select([job(1, mem=900), job(2, mem=200)], "s", FreeResources(cpus=2, mem_mb=1000), 0, 2) == [1]
    lic = [job(1, lic={"m": 1}), job(2, lic={"m": 1}), job(3)]
    assert p.select(lic, "s", FreeResources(cpus=3, licences={"m": 1}), 0, 3) == [1, 3]
    assert p.select(lic, "s", FreeResources(cpus=3), 0, 3) == [3]  # site offers no licence m


@given(
    st.lists(st.tuples(st.integers(1, 4), st.integers(0, 5), st.integers(0, 100), st.integers(0, 500)), max_size=20),
    st.integers(1, 8),
    st.integers(0, 1000),
    st.one_of(st.none(), st.integers(0, 120)),
    st.integers(1, 6),
)
@example(specs=[(1, 0, 0, 1), (1, 0, 0, 1)], cpus=2, mem=1, rem=None, limit=2)
def test_fcfs_invariant(
    specs: list[tuple[int, int, int, int]], cpus: int, mem: int, rem: int | None, limit: int
) -> None:
    ready = [job(i, c, s, t, m) for i, (c, s, t, m) in enumerate(specs)]
    free = FreeResources(cpus=cpus, mem_mb=mem, remaining_s=rem)
    chosen = FcfsClaim().select(ready, "s", free, 0, limit)
    by_id = {j.job_id: j for j in ready}
    assert len(chosen) <= limit and len(set(chosen)) == len(chosen) and set(chosen) <= set(by_id)
    assert sum(by_id[i].requested_procs for i in chosen) <= cpus
    if mem > 0:
        assert sum(by_id[i].attrs["mem_mb"] for i in chosen) <= mem
    if rem is not None:
        assert all(by_id[i].requested_time <= rem or by_id[i].requested_time == 0 for i in chosen)
    keys = [(by_id[i].submit_time, i) for i in chosen]
    assert keys == sorted(keys)


def test_trellis_thresholds() -> None:
    t = TrellisThrottle(increase_below_s=10, reduce_above_s=60)
    assert [t.decide(w) for w in (0, 9.9, 10, 60, 60.1)] == ["increase", "increase", "maintain", "maintain", "reduce"]
    assert t.target(3, 0, lower=0, limit=3) == ("increase", 3)  # never above the site limit
    assert t.target(1, 100, lower=1, limit=3) == ("reduce", 1)
    assert t.target(2, 100, lower=0, limit=3) == ("reduce", 1)
    with pytest.raises(ValueError, match="must not exceed"):
        TrellisThrottle(increase_below_s=100, reduce_above_s=10)


@given(st.floats(0, 1e4), st.floats(0, 1e4), st.integers(0, 10), st.integers(0, 10), st.integers(1, 20))
def test_trellis_monotone_and_clamped(w1: float, w2: float, cur: int, lower: int, limit: int) -> None:
    lower = min(lower, limit)
    t = TrellisThrottle(increase_below_s=30, reduce_above_s=300)
    a, b = sorted((w1, w2))
    ta = t.target(cur, a, lower=lower, limit=limit)[1]
    tb = t.target(cur, b, lower=lower, limit=limit)[1]
    assert lower <= tb <= ta <= limit
