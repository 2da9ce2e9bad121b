"""Availability profile: hand-worked steps and a brute-force check of ``earliest_fit``."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metasched.model.profile import Profile


def test_from_releases_merges_equal_times_and_counts_past_ends_as_now() -> None:
    # 10 procs, 2 free at 5; releases: 3 at 4 (past: counts at 5), 2 at 8, 1 at 8, 2 at 12.
    prof = Profile.from_releases(10, 5, 2, [(8, 2), (4, 3), (12, 2), (8, 1)])
    assert prof.steps() == [(5, 5), (8, 8), (12, 10)]


def test_earliest_fit_and_reserve_hand_worked() -> None:
    prof = Profile.from_releases(10, 0, 2, [(10, 5), (20, 3)])  # 2 on [0,10), 7 on [10,20), 10 after
    assert prof.earliest_fit(2, 100) == 0
    assert prof.earliest_fit(3, 5) == 10
    assert prof.earliest_fit(8, 1) == 20
    assert prof.earliest_fit(3, 5, after=12) == 12
    prof.reserve(10, 15, 6)  # takes 6 on [10, 25): 1 on [10,20), 4 on [20,25)
    assert prof.steps() == [(0, 2), (10, 1), (20, 4), (25, 10)]
    assert prof.earliest_fit(2, 12) == 20  # [0,10) has 2 but only for 10 s; [20,25) has 4, then 10
    assert prof.earliest_fit(2, 10) == 0  # exactly fills [0, 10)
    assert prof.free_at(22) == 4
    with pytest.raises(ValueError, match="exceeds the free processors"):
        prof.reserve(5, 10, 2)  # [10, 15) has only 1
    assert prof.steps() == [(0, 2), (5, 2), (10, 1), (15, 1), (20, 4), (25, 10)]  # split, not taken
    with pytest.raises(ValueError, match="never fit"):
        prof.earliest_fit(11, 1)


def test_advance_forgets_the_past() -> None:
    prof = Profile.from_releases(10, 0, 2, [(10, 5), (20, 3)])
    prof.advance(15)
    assert prof.steps() == [(15, 7), (20, 10)]
    prof.advance(20)
    assert prof.steps() == [(20, 10)]
    with pytest.raises(ValueError, match="before the profile's origin"):
        prof.advance(3)


@settings(max_examples=300, deadline=None)
@given(
    st.integers(1, 8),
    st.lists(st.tuples(st.integers(0, 30), st.integers(1, 15), st.integers(1, 8)), max_size=8),
    st.integers(1, 8),
    st.integers(1, 20),
    st.integers(0, 40),
)
def test_earliest_fit_is_the_first_instant_that_fits(
    capacity: int, reservations: list[tuple[int, int, int]], procs: int, duration: int, after: int
) -> None:
    prof = Profile(capacity, 0)
    held: list[tuple[int, int, int]] = []
    for start, length, width in reservations:
        width = min(width, capacity)
        s = prof.earliest_fit(width, length, start)
        prof.reserve(s, length, width)
        held.append((int(s), int(s) + length, width))
    procs = min(procs, capacity)

    def fits(s: int) -> bool:  # integer instants suffice: every breakpoint is an integer
        return all(sum(w for a, b, w in held if a <= t < b) + procs <= capacity for t in range(s, s + duration))

    expected = next(s for s in range(after, after + 200) if fits(s))
    assert prof.earliest_fit(procs, duration, after) == expected
    # Invariant: strictly increasing breakpoints, free within [0, capacity].
    assert all(a < b for a, b in zip(prof.times, prof.times[1:], strict=False))
    assert all(0 <= f <= capacity for f in prof.free)


@settings(max_examples=300, deadline=None)
@given(
    st.integers(1, 8),
    st.lists(st.tuples(st.integers(0, 30), st.integers(0, 15), st.integers(0, 8)), min_size=1, max_size=10),
)
def test_place_equals_earliest_fit_then_reserve(capacity: int, jobs: list[tuple[int, int, int]]) -> None:
    a, b = Profile(capacity, 0), Profile(capacity, 0)
    for after, duration, procs in jobs:
        procs = min(procs, capacity)
        expected = a.earliest_fit(procs, duration, after)
        a.reserve(expected, duration, procs)
        assert b.place(procs, duration, after) == expected
        assert b.steps() == a.steps()
