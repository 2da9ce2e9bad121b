"""Trellis placeholder throttling by queue wait."""

from __future__ import annotations

from typing import ClassVar

from metasched.policy.throttle.base import Throttle


class TrellisThrottle(Throttle):
    """Short queue wait: one more placeholder; long wait: one fewer; otherwise keep the count.

    Source: Pinchak, Lu and Goldenberg, "Practical Heterogeneous Placeholder Scheduling in Overlay
    Metacomputers" (seed 003), section 3.2 and figure 4: each starting placeholder measures how long
    it queued and a local ``decide`` script answers increase / maintain / reduce. Invariant: the
    decision is monotone in the wait (a longer wait never yields more placeholders). Tie-break: a
    wait exactly at a threshold maintains.
    """

    key: ClassVar[str] = "trellis"

    def __init__(self, *, increase_below_s: float = 30.0, reduce_above_s: float = 300.0):
        if increase_below_s > reduce_above_s:
            raise ValueError(f"increase_below_s ({increase_below_s}) must not exceed reduce_above_s ({reduce_above_s})")
        self.increase_below_s = increase_below_s
        self.reduce_above_s = reduce_above_s

    def decide(self, wait_s: float) -> str:
        if wait_s < self.increase_below_s:
            return "increase"
        if wait_s > self.reduce_above_s:
            return "reduce"
        return "maintain"
