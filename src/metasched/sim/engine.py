"""The discrete-event core: a deterministic event queue.

Events are ordered by ``(time, kind, sequence)``: at one instant, every job end (``END``) comes
before every arrival (``SUBMIT``), and events of one kind come in the order they were scheduled
(the sequence number, as SimPy breaks ties with a counter). Drivers pop *all* events of the next
instant, apply them, then run ONE scheduling pass; that is the canonical semantics every driver in
:mod:`metasched.sim` keeps:

    at each instant t: release every job that ends at t, then add every job submitted at t,
    then run one scheduling pass.

(A pass may start a zero-length job, whose end at the same t is then processed before a further
pass at t.)

Drivers may leave out a pass that provably starts nothing (no queued job fits the free
processors: :attr:`metasched.sim.site.SiteState.min_queued_width`); the schedule is the same, but
a scheduler does not see every instant, so a policy must never rely on being called at each one
(it is pure anyway: everything it knows is in its view).
"""

from __future__ import annotations

import heapq
from enum import IntEnum
from typing import Any


class EventKind(IntEnum):
    """Kinds of event, in the order they are processed at one instant."""

    END = 0
    CANCEL = 1
    SUBMIT = 2
    WAKE = 3


class EventQueue:
    """A heap of ``(time, kind, sequence, payload)``; deterministic for equal times and kinds."""

    __slots__ = ("_heap", "_seq")

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, int, Any]] = []
        self._seq = 0

    def push(self, time: float, kind: EventKind, payload: Any = None) -> None:
        heapq.heappush(self._heap, (time, int(kind), self._seq, payload))
        self._seq += 1

    def __len__(self) -> int:
        return len(self._heap)

    def peek_time(self) -> float:
        """Time of the next event (``inf`` when empty)."""
        return self._heap[0][0] if self._heap else float("inf")

    def pop_instant(self) -> tuple[float, list[tuple[int, Any]]]:
        """Remove and return every event of the next instant as ``(time, [(kind, payload), ...])``."""
        heap = self._heap
        time = heap[0][0]
        batch = []
        while heap and heap[0][0] == time:
            _, kind, _, payload = heapq.heappop(heap)
            batch.append((kind, payload))
        return time, batch
