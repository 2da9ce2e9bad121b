"""Availability profile: free processors of one machine as a step function of time.

The profile is a sorted list of breakpoints ``times[i]`` with ``free[i]`` processors free on
``[times[i], times[i+1])``; the last step extends to infinity. It is the data structure behind
conservative backfilling and every "when could this job start here?" question.

Invariant: ``times`` is strictly increasing and ``0 <= free[i] <= capacity`` for every step.
"""

from __future__ import annotations

from bisect import bisect_right


class Profile:
    """Free processors over time, starting at ``origin``."""

    __slots__ = ("capacity", "free", "times")

    def __init__(self, capacity: int, origin: float, free_now: int | None = None) -> None:
        self.capacity = capacity
        self.times: list[float] = [origin]
        self.free: list[int] = [capacity if free_now is None else free_now]

    @classmethod
    def from_releases(cls, capacity: int, origin: float, free_now: int, releases: list[tuple[float, int]]) -> Profile:
        """Profile with ``free_now`` processors free at ``origin`` and ``procs`` more at each
        ``(time, procs)`` of ``releases`` (times before ``origin`` count as ``origin``)."""
        prof = cls(capacity, origin, free_now)
        times, free = prof.times, prof.free
        avail = free_now
        for end, procs in sorted(releases):
            avail += procs
            if end <= origin:
                free[0] = avail
            elif end == times[-1]:
                free[-1] = avail
            else:
                times.append(end)
                free.append(avail)
        return prof

    def advance(self, t: float) -> None:
        """Forget the profile before instant ``t`` (at or after the origin): ``t`` becomes the
        origin, with the processors free at ``t``. Used to carry a profile from one scheduling
        pass to a later one."""
        times = self.times
        k = bisect_right(times, t) - 1
        if k < 0:
            raise ValueError(f"instant {t} is before the profile's origin {times[0]}")
        if k > 0:
            del times[:k]
            del self.free[:k]
        times[0] = t

    def free_at(self, t: float) -> int:
        """Processors free at instant ``t`` (``t`` at or after the origin)."""
        return self.free[max(bisect_right(self.times, t) - 1, 0)]

    def earliest_fit(self, procs: int, duration: float, after: float | None = None) -> float:
        """Earliest instant ``s >= after`` with at least ``procs`` free on ``[s, s + duration)``.

        A zero-length job needs ``procs`` free at the instant ``s`` itself. Raises ``ValueError``
        when the job is wider than the machine (it could never start).
        """
        if procs > self.capacity:
            raise ValueError(f"a job of {procs} processors can never fit a machine of {self.capacity}")
        times, free = self.times, self.free
        n = len(times)
        if after is None:
            i = 0
            floor = times[0]
        else:
            i = bisect_right(times, after) - 1
            if i < 0:
                i = 0
            floor = after if after > times[0] else times[0]
        while i < n:
            if free[i] < procs:
                i += 1
                continue
            start = times[i] if times[i] > floor else floor
            end = start + duration
            j = i + 1
            while j < n and times[j] < end:
                if free[j] < procs:
                    break
                j += 1
            else:
                return start
            i = j + 1  # step j lacks processors: no start before it can work
        raise AssertionError("unreachable: the last step of a profile must reach full capacity")

    def place(self, procs: int, duration: float, after: float) -> float:
        """``earliest_fit(procs, duration, after)`` then ``reserve`` there, in one walk; returns
        the start. (The walk that proves the fit already found where the reservation ends.)"""
        if procs > self.capacity:
            raise ValueError(f"a job of {procs} processors can never fit a machine of {self.capacity}")
        times, free = self.times, self.free
        n = len(times)
        i = bisect_right(times, after) - 1
        if i < 0:
            i = 0
            after = times[0]
        while i < n:
            if free[i] < procs:
                i += 1
                continue
            start = times[i] if times[i] > after else after
            end = start + duration
            j = i + 1
            while j < n and times[j] < end:
                if free[j] < procs:
                    break
                j += 1
            else:
                break
            i = j + 1
        else:
            raise AssertionError("unreachable: the last step of a profile must reach full capacity")
        if duration <= 0 or procs == 0:
            return start
        # Steps i..j-1 cover [start, end); split at end, then at start, then take the processors.
        if j == n or times[j] != end:
            times.insert(j, end)
            free.insert(j, free[j - 1])
        if times[i] != start:
            times.insert(i + 1, start)
            free.insert(i + 1, free[i])
            i += 1
            j += 1
        for k in range(i, j):
            free[k] -= procs
        return start

    def reserve(self, start: float, duration: float, procs: int) -> None:
        """Take ``procs`` processors on ``[start, start + duration)``. Raises if they are not free."""
        if duration <= 0 or procs == 0:
            return
        i = self._split(start)
        j = self._split(start + duration)
        free = self.free
        for k in range(i, j):
            if free[k] < procs:
                for undo in range(i, k):
                    free[undo] += procs
                raise ValueError(
                    f"reserve({start}, {duration}, {procs}) exceeds the free processors at {self.times[k]}"
                )
            free[k] -= procs

    def _split(self, t: float) -> int:
        """Index of the step starting exactly at ``t``, inserting a breakpoint there if needed."""
        times = self.times
        k = bisect_right(times, t) - 1
        if k >= 0 and times[k] == t:
            return k
        if k < 0:
            raise ValueError(f"instant {t} is before the profile's origin {times[0]}")
        times.insert(k + 1, t)
        self.free.insert(k + 1, self.free[k])
        return k + 1

    def steps(self) -> list[tuple[float, int]]:
        """The profile as ``(time, free)`` steps."""
        return list(zip(self.times, self.free, strict=True))
