"""Whether a remote site answers, and when to try it again.

Seed 003, section 1.1: the sites of an overlay metacomputer belong to different administrative
domains; one of them going away (network cut, maintenance, an expired account) must not stop the
others. The site manager asks each site's :class:`SiteHealth` before talking to it: a site in
back-off is skipped at once (no connection attempt, no timeout to wait out), so one dead site costs
the others nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum


class SiteState(StrEnum):
    """``unknown`` until the first attempt; then ``up`` after a success, ``down`` after a failure."""

    UNKNOWN = "unknown"
    UP = "up"
    DOWN = "down"


@dataclass(frozen=True, slots=True)
class Backoff:
    """Exponential back-off: the n-th consecutive failure (n >= 1) waits ``min(max_s, base_s * factor**(n-1))``.

    Invariant: delays are non-decreasing in n and never exceed ``max_s``.
    """

    base_s: float = 1.0
    factor: float = 2.0
    max_s: float = 300.0

    def __post_init__(self) -> None:
        if self.base_s <= 0 or self.factor < 1 or self.max_s < self.base_s:
            raise ValueError(f"bad back-off: need base_s > 0, factor >= 1, max_s >= base_s; got {self}")

    def delay_s(self, failures: int) -> float:
        """The wait after ``failures`` consecutive failures (0 failures -> no wait)."""
        if failures <= 0:
            return 0.0
        # Cap the exponent first so a long outage cannot overflow the float.
        exponent = min(failures - 1, 64)
        return min(self.max_s, self.base_s * self.factor**exponent)


@dataclass(slots=True)
class SiteHealth:
    """The reachability record of one site: state, last error, consecutive failures, next retry instant.

    Instants are on whatever monotonic clock the owner passes in (the runner uses
    :func:`time.monotonic`; tests pass numbers). Invariant: ``state is DOWN`` iff ``failures > 0``,
    and then ``next_retry_at = last failure instant + backoff.delay_s(failures)``.
    """

    backoff: Backoff = field(default_factory=Backoff)
    state: SiteState = SiteState.UNKNOWN
    failures: int = 0
    last_error: str | None = None
    last_ok_at: float | None = None
    last_failure_at: float | None = None
    next_retry_at: float | None = None

    def may_try(self, now: float) -> bool:
        """Whether a connection attempt is allowed at ``now`` (always, unless in back-off)."""
        return self.next_retry_at is None or now >= self.next_retry_at

    def record_ok(self, now: float) -> None:
        """The site answered: it is up and its back-off is cleared."""
        self.state = SiteState.UP
        self.failures = 0
        self.last_ok_at = now
        self.next_retry_at = None

    def record_failure(self, now: float, error: str) -> None:
        """The site did not answer: it is down until ``now + backoff.delay_s(failures)``."""
        self.state = SiteState.DOWN
        self.failures += 1
        self.last_error = error
        self.last_failure_at = now
        self.next_retry_at = now + self.backoff.delay_s(self.failures)

    def as_dict(self) -> dict[str, object]:
        """A JSON-ready snapshot for ``metasched sites`` and the service's status page."""
        return {
            "state": self.state.value,
            "failures": self.failures,
            "last_error": self.last_error,
            "last_ok_at": self.last_ok_at,
            "last_failure_at": self.last_failure_at,
            "next_retry_at": self.next_retry_at,
        }
