"""Back-off and site health: exact hand-worked cases and properties."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from metasched.runtime.remote.health import Backoff, SiteHealth, SiteState


def test_backoff_doubles_then_caps() -> None:
    b = Backoff(base_s=1.0, factor=2.0, max_s=10.0)
    assert [b.delay_s(n) for n in range(6)] == [0.0, 1.0, 2.0, 4.0, 8.0, 10.0]
    assert b.delay_s(10_000) == 10.0


@given(
    base=st.floats(0.01, 100),
    factor=st.floats(1.0, 10.0),
    extra=st.floats(0.0, 1000),
    n=st.integers(0, 200),
)
def test_backoff_is_monotone_and_bounded(base: float, factor: float, extra: float, n: int) -> None:
    b = Backoff(base_s=base, factor=factor, max_s=base + extra)
    assert 0.0 <= b.delay_s(n) <= b.delay_s(n + 1) <= b.max_s


@pytest.mark.parametrize("kwargs", [{"base_s": 0}, {"factor": 0.5}, {"base_s": 5, "max_s": 1}])
def test_backoff_rejects_bad_parameters(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError, match="bad back-off"):
        Backoff(**kwargs)


def test_health_goes_down_backs_off_and_recovers() -> None:
    h = SiteHealth(backoff=Backoff(base_s=2.0, factor=3.0, max_s=100.0))
    assert h.state is SiteState.UNKNOWN and h.may_try(0.0)
    h.record_failure(10.0, "refused")
    assert (h.state, h.failures, h.next_retry_at, h.last_error) == (SiteState.DOWN, 1, 12.0, "refused")
    assert not h.may_try(11.9) and h.may_try(12.0)
    h.record_failure(12.0, "timed out")
    assert h.next_retry_at == 18.0 and h.failures == 2
    h.record_ok(18.5)
    assert (h.state, h.failures, h.next_retry_at, h.last_ok_at) == (SiteState.UP, 0, None, 18.5)
    assert h.last_error == "timed out"  # kept for the report
    assert h.as_dict()["state"] == "up"


@given(st.lists(st.tuples(st.booleans(), st.floats(0, 1e6)), max_size=30))
def test_health_invariant(events: list[tuple[bool, float]]) -> None:
    h = SiteHealth()
    for ok, now in events:
        if ok:
            h.record_ok(now)
        else:
            h.record_failure(now, "x")
        assert (h.state is SiteState.DOWN) == (h.failures > 0)
        if h.failures:
            assert h.next_retry_at == now + h.backoff.delay_s(h.failures)
        else:
            assert h.next_retry_at is None
