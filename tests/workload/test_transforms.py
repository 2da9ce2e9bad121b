"""Workload transforms: hand-worked cases and hypothesis properties."""

from __future__ import annotations

import copy
import itertools
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metasched.model import Job
from metasched.workload import transforms as tf
from tests.workload.conftest import job_lists


def _jobs() -> list[Job]:
    return [
        Job(1, 100.0, 10.0, 20.0, 4),
        Job(2, 110.0, 5.0, 5.0, 200),
        Job(3, 130.0, 7.0, 9.0, 1),
        Job(4, 130.0, 1.0, 1.0, 128, home_site=2),
    ]


def _snapshot(jobs: list[Job]) -> list[tuple[object, ...]]:
    return [(*(getattr(j, f) for f in j.__dataclass_fields__ if f != "attrs"), dict(j.attrs)) for j in jobs]


def _work(jobs: list[Job]) -> float:
    return sum(j.requested_procs * j.run_time for j in jobs)


def test_first_n_and_time_window() -> None:
    jobs = _jobs()
    assert [j.job_id for j in tf.first_n(jobs, 2)] == [1, 2]
    assert [j.job_id for j in tf.first_n(jobs, 10)] == [1, 2, 3, 4]
    assert tf.first_n(jobs, 0) == []
    assert [j.job_id for j in tf.time_window(jobs, 110, 130)] == [2]
    assert [j.job_id for j in tf.time_window(jobs, 110, 130.5)] == [2, 3, 4]
    with pytest.raises(ValueError):
        tf.first_n(jobs, -1)
    with pytest.raises(ValueError):
        tf.time_window(jobs, 5, 4)


def test_load_factor_hand_case() -> None:
    out = tf.load_factor(_jobs(), 1.5)
    assert [(j.submit_time, j.run_time, j.requested_time) for j in out[:2]] == [(100, 15, 30), (110, 7.5, 7.5)]
    with pytest.raises(ValueError):
        tf.load_factor(_jobs(), 0)


def test_scale_interarrival_and_shift_and_rebase() -> None:
    assert [j.submit_time for j in tf.scale_interarrival(_jobs(), 0.5)] == [100, 105, 115, 115]
    assert [j.submit_time for j in tf.time_shift(_jobs(), -50)] == [50, 60, 80, 80]
    assert [j.submit_time for j in tf.rebase(_jobs())] == [0, 10, 30, 30]
    with pytest.raises(ValueError, match="negative"):
        tf.time_shift(_jobs(), -101)


def test_merge_hand_case() -> None:
    a = [Job(1, 0.0, 1.0, 1.0, 1), Job(2, 10.0, 1.0, 1.0, 1, preceding_job=1)]
    b = [Job(1, 0.0, 2.0, 2.0, 2, home_site=7), Job(5, 5.0, 2.0, 2.0, 2, preceding_job=99)]
    out = tf.merge(a, b)
    assert [(j.job_id, j.submit_time, j.home_site, j.attrs["source_id"]) for j in out] == [
        (1, 0, 0, 1),  # tie at 0: the earlier list first
        (2, 0, 7, 1),  # home_site kept when set
        (3, 5, 1, 5),
        (4, 10, 0, 2),
    ]
    assert out[3].preceding_job == 1  # a's job 1 is now job 1
    assert out[2].preceding_job == -1  # job 99 is not in b


def test_split_round_robin_hand_case() -> None:
    assert [j.home_site for j in tf.split_round_robin(_jobs(), 3)] == [0, 1, 2, 0]
    with pytest.raises(ValueError):
        tf.split_round_robin(_jobs(), 0)


def test_split_wide_hand_case() -> None:
    out = tf.split_wide(_jobs(), 64)
    assert [(j.job_id, j.requested_procs, j.attrs.get("parent_id")) for j in out] == [
        (1, 4, None),
        (2, 64, 2),
        (5, 64, 2),
        (6, 64, 2),
        (7, 8, 2),
        (3, 1, None),
        (4, 64, 4),
        (8, 64, 4),
    ]
    assert all(j.home_site == 2 for j in out if j.attrs.get("parent_id") == 4)


ALL = [
    lambda js: tf.first_n(js, 5),
    lambda js: tf.time_window(js, 2000, 8000),
    lambda js: tf.load_factor(js, 1.7),
    lambda js: tf.scale_interarrival(js, 0.3),
    lambda js: tf.time_shift(js, 12.5),
    lambda js: tf.rebase(js),
    lambda js: tf.merge(js, js),
    lambda js: tf.split_round_robin(js, 3),
    lambda js: tf.split_wide(js, 7),
]


@settings(max_examples=30, deadline=None)
@given(jobs=job_lists(), which=st.integers(0, len(ALL) - 1))
def test_no_transform_mutates_its_input(jobs: list[Job], which: int) -> None:
    before = _snapshot(jobs)
    ids = [id(j) for j in jobs]
    kept = copy.deepcopy(jobs)
    out = ALL[which](jobs)
    inputs = {id(j) for j in jobs}
    for j in out:  # changing a new output Job must leave the input alone (shared ones are documented)
        if id(j) not in inputs:
            j.attrs["touched"] = True
            j.run_time += 1
    assert _snapshot(jobs) == before
    assert [id(j) for j in jobs] == ids
    assert jobs == kept


@settings(max_examples=60, deadline=None)
@given(jobs=job_lists(), part=st.integers(1, 70))
def test_split_wide_preserves_work_and_bounds_width(jobs: list[Job], part: int) -> None:
    out = tf.split_wide(jobs, part)
    assert _work(out) == _work(jobs)  # integer-valued floats: exact
    assert all(j.requested_procs <= part for j in out)
    assert len({j.job_id for j in out}) == len(out)
    for orig in jobs:
        parts = [j for j in out if j.attrs.get("parent_id", j.job_id) == orig.job_id and j.job_id != -1]
        parts = [j for j in parts if j is orig or j.attrs.get("parent_id") == orig.job_id]
        assert sum(p.requested_procs for p in parts) == orig.requested_procs
        assert len(parts) == max(1, math.ceil(orig.requested_procs / part))
        assert all(
            (p.submit_time, p.run_time, p.requested_time, p.home_site)
            == (orig.submit_time, orig.run_time, orig.requested_time, orig.home_site)
            for p in parts
        )
    submits = [j.submit_time for j in out]
    assert submits == sorted(submits)


@settings(max_examples=60, deadline=None)
@given(jobs=job_lists(), f=st.floats(0.01, 100))
def test_load_factor_scales_work_keeps_submits(jobs: list[Job], f: float) -> None:
    out = tf.load_factor(jobs, f)
    assert [j.submit_time for j in out] == [j.submit_time for j in jobs]
    assert math.isclose(_work(out), f * _work(jobs), rel_tol=1e-12, abs_tol=1e-9)
    assert all(j.run_time <= j.requested_time and j.requested_time > 0 for j in out)
    assert [(j.job_id, j.requested_procs) for j in out] == [(j.job_id, j.requested_procs) for j in jobs]


@settings(max_examples=60, deadline=None)
@given(jobs=job_lists(), f=st.floats(0, 10))
def test_scale_interarrival_scales_every_gap(jobs: list[Job], f: float) -> None:
    out = tf.scale_interarrival(jobs, f)
    assert len(out) == len(jobs)
    if jobs:
        assert out[0].submit_time == jobs[0].submit_time
    for (a, b), (x, y) in zip(itertools.pairwise(jobs), itertools.pairwise(out), strict=True):
        assert math.isclose(y.submit_time - x.submit_time, f * (b.submit_time - a.submit_time), abs_tol=1e-6)
    assert _work(out) == _work(jobs)


@settings(max_examples=60, deadline=None)
@given(jobs=job_lists(), dt=st.integers(0, 10**6))
def test_time_shift_and_rebase(jobs: list[Job], dt: int) -> None:
    shifted = tf.time_shift(jobs, dt)
    assert [j.submit_time - dt for j in shifted] == [j.submit_time for j in jobs]
    based = tf.rebase(shifted)
    if jobs:
        assert based[0].submit_time == 0
        assert [j.submit_time for j in based] == [j.submit_time - jobs[0].submit_time for j in jobs]


@settings(max_examples=60, deadline=None)
@given(lists=st.lists(job_lists(max_jobs=10), max_size=4))
def test_merge_properties(lists: list[list[Job]]) -> None:
    out = tf.merge(*lists)
    assert len(out) == sum(map(len, lists))
    assert [j.job_id for j in out] == list(range(1, len(out) + 1))
    submits = [j.submit_time for j in out]
    assert submits == sorted(submits)
    assert _work(out) == sum(_work(js) for js in lists)
    for k, js in enumerate(lists):
        # every job of list k appears once, with its fields and its home site (k when it had none)
        expected = sorted((j.submit_time, j.job_id, j.run_time, j.home_site if j.home_site >= 0 else k) for j in js)
        got = sorted((j.submit_time, j.attrs["source_id"], j.run_time, j.home_site) for j in out)
        remaining = list(got)
        for e in expected:
            assert e in remaining
            remaining.remove(e)


@settings(max_examples=60, deadline=None)
@given(jobs=job_lists(), n=st.integers(1, 5))
def test_round_robin_balances(jobs: list[Job], n: int) -> None:
    out = tf.split_round_robin(jobs, n)
    counts = [sum(1 for j in out if j.home_site == s) for s in range(n)]
    assert max(counts, default=0) - min(counts, default=0) <= 1
    assert [j.home_site for j in out] == [i % n for i in range(len(jobs))]
    assert [j.job_id for j in out] == [j.job_id for j in jobs]


@settings(max_examples=40, deadline=None)
@given(jobs=job_lists(), n=st.integers(1, 4))
def test_by_home_site_partitions(jobs: list[Job], n: int) -> None:
    groups = tf.by_home_site(tf.split_round_robin(jobs, n))
    assert sorted(groups) == list(range(min(n, len(jobs))))
    assert sum(map(len, groups.values())) == len(jobs)
    for site, js in groups.items():
        assert all(j.home_site == site for j in js)
        assert [j.submit_time for j in js] == sorted(j.submit_time for j in js)


@settings(max_examples=40, deadline=None)
@given(jobs=job_lists(), target=st.floats(0.1, 2))
def test_load_factor_reaches_target_offered_load(jobs: list[Job], target: float) -> None:
    from metasched.workload.info import offered_load

    load = offered_load(jobs, 64)
    if not load:
        return
    scaled = tf.load_factor(jobs, target / load)
    assert offered_load(scaled, 64) == pytest.approx(target, rel=1e-9)


@settings(max_examples=40, deadline=None)
@given(jobs=job_lists(), n=st.integers(0, 40))
def test_first_n_takes_the_earliest(jobs: list[Job], n: int) -> None:
    out = tf.first_n(jobs, n)
    assert len(out) == min(n, len(jobs))
    assert out == jobs[: len(out)]  # the input is in submit order already
    rest = jobs[len(out) :]
    assert all(a.submit_time <= b.submit_time for a in out for b in rest)


@settings(max_examples=40, deadline=None)
@given(jobs=job_lists(), start=st.integers(0, 20_000), length=st.integers(0, 20_000))
def test_time_window_is_exactly_the_half_open_interval(jobs: list[Job], start: int, length: int) -> None:
    out = tf.time_window(jobs, start, start + length)
    assert out == [j for j in jobs if start <= j.submit_time < start + length]
