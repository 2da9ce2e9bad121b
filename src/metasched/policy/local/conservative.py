"""Conservative backfilling."""

from __future__ import annotations

import heapq
from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from typing import Any, ClassVar

from metasched.model.job import Job
from metasched.model.profile import Profile
from metasched.policy.base import LocalScheduler, Plan, QueueOrder, SiteView


@dataclass(slots=True)
class ConservativeHint:
    """What a pass leaves for the next one (see :attr:`Plan.hint`): the availability profile
    with the running jobs and every reservation in it, the reservations of the queued jobs as a
    heap of ``(start, queue position, job)``, and the number of queued jobs left."""

    profile: Profile
    pending: list[tuple[float, int, Job]]
    reservations: dict[int, float]
    queued: int
    seq: int = 0


class ConservativeBackfill(LocalScheduler):
    """Conservative backfilling: every queued job holds a reservation.

    Source: Feitelson & Weil, "Utilization and predictability in scheduling the IBM SP2 with
    backfilling" (1998); seed 000 section 2 and section 5.

    One pass: the availability profile is built from the running jobs' expected ends (an end in
    the past counts as ``now``); the queued jobs are placed in queue order, each at its earliest
    fit in the profile; those whose earliest start is ``now`` start. When a running job has
    overrun its estimate, the profile counts its processors as free from ``now`` although they
    are still held: a job placed at ``now`` then starts only if it fits the processors really
    free, and otherwise keeps its reservation at ``now`` (it starts as soon as they are released).

    Invariant: a job never delays the reservation of any job ahead of it in the queue.
    Tie-break: queue order (the pluggable :class:`~metasched.policy.base.QueueOrder`).

    Hint (arrival-order queues only): under the conditions of :attr:`Plan.hint` (no job ended
    before its expected end, none overran, only arrivals) the previous reservations are still
    exactly what a rebuild would give. The rebuilt profile from ``now`` on equals the carried
    one (the jobs started then run until their reservation ends; jobs that ended did so at
    their expected end, before ``now``), so each old queued job, in queue order, has the same
    earliest fit, provided that fit is not before ``now``. No reservation lies strictly between
    the previous pass and ``now``: the earliest one is a breakpoint where processors free up,
    i.e. a running job's expected end, which is an end event and so a pass (a pass is skipped
    only when nothing fits, and a job whose reservation has come fits). Hence: the old jobs
    reserved at ``now`` start, and only the new arrivals are placed. Should a reservation lie
    before ``now`` anyway, or a job due now not fit, the pass falls back to a full rebuild.

    Repair (:meth:`replan`, for drivers whose sites change in every way: cancellations, early
    ends, arrivals anywhere in an efficacy queue): the previous pass's whole schedule is
    checked job by job and each job is searched again only where the changes since may let it
    start earlier or no longer let it start where it was; same plan as a full pass.
    """

    key: ClassVar[str] = "conservative"

    def plan(self, view: SiteView, now: float) -> Plan:
        hint = view.hint
        if isinstance(hint, ConservativeHint) and self.order.is_arrival_order and len(view.queue) >= hint.queued:
            plan = self._incremental(view, now, hint)
            if plan is not None:
                return plan
        return self._full_pass(view, now)

    def _full_pass(self, view: SiteView, now: float) -> Plan:
        profile = self.profile(view, now)
        starts = []
        reservations: dict[int, float] = {}
        pending: list[tuple[float, int, Job]] = []
        free = view.free_procs
        queue = view.queue if self.order.is_arrival_order else self.order.order(view, now)
        # Within one pass the profile only loses processors, so the first instant with ``procs``
        # free only moves later: remember it per width and search from there (same result as a
        # search from ``now``, without walking the saturated near future again for every job).
        first_free: dict[int, float] = {}
        # Likewise a job of the same width and estimate as one placed earlier in this pass cannot
        # start before it (any earlier start would have fitted that job too, on a profile that
        # then had at least as many processors free): search from the earlier job's start.
        fit_of_shape: dict[tuple[int, float], float] = {}
        times, frees = profile.times, profile.free
        for seq, job in enumerate(queue):
            procs = job.requested_procs
            duration = job.requested_time
            after = first_free.get(procs, now)
            k = bisect_right(times, after) - 1
            while k < len(times) and frees[k] < procs:
                k += 1
            if k < len(times) and times[k] > after:
                after = times[k]
            first_free[procs] = after
            shape = (procs, duration)
            previous = fit_of_shape.get(shape)
            if previous is not None and previous > after:
                after = previous
            start = profile.place(procs, duration, after)
            fit_of_shape[shape] = start
            if start <= now and job.requested_procs <= free:
                starts.append(job)
                free -= job.requested_procs
            else:
                reservations[job.job_id] = start
                pending.append((start, seq, job))
        heapq.heapify(pending)
        hint = ConservativeHint(profile, pending, reservations, len(queue) - len(starts), len(queue))
        return Plan(starts=starts, reservations=dict(reservations), hint=hint)

    def _incremental(self, view: SiteView, now: float, hint: ConservativeHint) -> Plan | None:
        pending = hint.pending
        free = view.free_procs
        due: list[Job] = []
        while pending and pending[0][0] <= now:
            start, _, job = pending[0]
            if start < now or job.requested_procs > free:
                return None
            heapq.heappop(pending)
            due.append(job)
            free -= job.requested_procs
        profile = hint.profile
        profile.advance(now)
        reservations = hint.reservations
        for job in due:
            del reservations[job.job_id]
        starts = due
        seq = hint.seq
        for job in view.queue[hint.queued :]:
            start = profile.place(job.requested_procs, job.requested_time, now)
            if start <= now and job.requested_procs <= free:
                starts.append(job)
                free -= job.requested_procs
            else:
                reservations[job.job_id] = start
                heapq.heappush(pending, (start, seq, job))
            seq += 1
        hint.seq = seq
        hint.queued = len(view.queue) - len(starts)
        return Plan(starts=starts, reservations=dict(reservations), hint=hint)

    # -- repair: a whole pass from the previous schedule -------------------------------------

    def replan(self, view: SiteView, now: float, previous: Any) -> tuple[Plan, Any]:
        """``plan(view, now)`` (without its hint), computed by repairing ``previous``, a
        :class:`ConservativeSchedule` this method returned earlier for any view at an instant
        ``<= now``; returns the plan and the schedule to pass next time. ``previous`` is not
        modified.

        Why the repair is exact. Let ``P(q)`` be the profile a pass places queued job ``q`` in:
        the running jobs' releases plus the reservations of the jobs ahead of ``q``. In the old
        pass ``q`` got ``r``, the earliest start ``>= old now`` where it fits ``P_old(q)``. In
        the new pass (same relative order of the jobs both queues hold, which a rank that
        depends on the job alone guarantees), ``P_new(q) - P_old(q)`` is a sum of *gains* (a
        running job that ended before its expected end, the old windows of the jobs ahead
        that left the queue or moved) and *losses* (jobs started since, new jobs, the new
        windows of moved jobs). A start ``s`` in ``[now, r)`` did not fit ``P_old(q)``, so it
        can fit ``P_new(q)`` only if its window meets a gain: only those starts are searched.
        If none fits, ``r`` itself still fits unless its window meets a loss (then it is
        checked, and on failure the search goes on from ``r``). Gains and losses are kept as
        unions of intervals, supersets of where the profiles really differ (a superset only
        costs searches). A job started as planned (at its old reservation) leaves the profile
        of the jobs behind it unchanged: its window is only a loss for the jobs ahead.
        Queue orders whose rank may depend on the view or ``now`` get a full pass.
        """
        order = self.order
        static = order.is_arrival_order or order.is_static
        if not isinstance(previous, ConservativeSchedule) or now < previous.now or not static:
            previous = None
        return _repair(view, now, previous, order)

    @staticmethod
    def profile(view: SiteView, now: float) -> Profile:
        """The availability profile of ``view`` from its running jobs alone."""
        running = view.running_by_end if view.running_by_end is not None else view.running
        releases = [(r.expected_end, r.procs) for r in running]
        return Profile.from_releases(view.total_procs, now, view.free_procs, releases)


@dataclass(slots=True)
class ConservativeSchedule:
    """A conservative pass's whole schedule, the reference :meth:`ConservativeBackfill.replan`
    repairs: the instant, the availability from the running jobs alone, and every queued job
    in queue order with its start (that instant for the jobs the pass started). ``ranks`` holds
    the queue order's keys when it is not arrival order."""

    now: float
    base: Profile
    ids: list[int]
    procs: list[int]
    durations: list[float]
    starts: list[float]
    ranks: list[Any] | None
    #: ``(position, times, free)``: the profile (``now`` on) the job at ``position`` was placed
    #: in, every :data:`_MARK_EVERY` jobs; shared between schedules, never modified.
    marks: list[tuple[int, list[float], list[int]]]


#: How often (in queued jobs) a schedule keeps a copy of its profile: a repair starts from the
#: last copy before the first job that may change rather than from the running jobs alone.
_MARK_EVERY = 64


class _Intervals:
    """A union of half-open intervals ``[lo, hi)``, disjoint and sorted."""

    __slots__ = ("his", "los")

    def __init__(self) -> None:
        self.los: list[float] = []
        self.his: list[float] = []

    def add(self, lo: float, hi: float) -> None:
        los, his = self.los, self.his
        i = bisect_left(his, lo)  # first interval ending at or after lo
        j = bisect_right(los, hi)  # intervals i..j-1 touch [lo, hi]
        if i < j:
            if los[i] < lo:
                lo = los[i]
            if his[j - 1] > hi:
                hi = his[j - 1]
        los[i:j] = [lo]
        his[i:j] = [hi]

    def meets(self, lo: float, hi: float) -> bool:
        """Whether ``[lo, hi)`` meets the union."""
        his = self.his
        k = bisect_right(his, lo)
        return k < len(his) and self.los[k] < hi


def _base_diff(old: Profile, new: Profile, now: float, gains: _Intervals, losses: _Intervals) -> bool:
    """Add to ``gains`` (``losses``) the parts of ``[now, inf)`` where ``new`` has more (fewer)
    processors free than ``old``; whether there are any."""
    changed = False
    ot, of, nt, nf = old.times, old.free, new.times, new.free
    i = max(bisect_right(ot, now) - 1, 0)
    j = max(bisect_right(nt, now) - 1, 0)
    t = now
    while True:
        d = nf[j] - of[i]
        t_old = ot[i + 1] if i + 1 < len(ot) else None
        t_new = nt[j + 1] if j + 1 < len(nt) else None
        if t_old is None and t_new is None:
            nxt = float("inf")
        elif t_old is None:
            nxt = t_new  # type: ignore[assignment]
        elif t_new is None:
            nxt = t_old
        else:
            nxt = t_old if t_old < t_new else t_new
        if d > 0:
            gains.add(t, nxt)
            changed = True
        elif d < 0:
            losses.add(t, nxt)
            changed = True
        if nxt == float("inf"):
            return changed
        if t_old == nxt:
            i += 1
        if t_new == nxt:
            j += 1
        t = nxt


def _repair(
    view: SiteView, now: float, prev: ConservativeSchedule | None, order: QueueOrder
) -> tuple[Plan, ConservativeSchedule]:
    running = view.running_by_end if view.running_by_end is not None else view.running
    base = Profile.from_releases(view.total_procs, now, view.free_procs, [(r.expected_end, r.procs) for r in running])
    profile = base.copy()
    gains, losses = _Intervals(), _Intervals()
    ranks: list[Any] | None = None
    position: dict[int, int] = {}
    planned: set[int] = set()
    if prev is None:
        if order.is_arrival_order:
            queue = list(view.queue)
        else:
            keyed = sorted(((order.rank(job, view, now), job) for job in view.queue), key=_first)
            queue = [job for _, job in keyed]
            ranks = [key for key, _ in keyed]
    else:
        position = {job_id: k for k, job_id in enumerate(prev.ids)}
        if order.is_arrival_order:
            queue = list(view.queue)
        else:
            queue, ranks = _merged_order(view, now, prev, position, order)
        # A job started as planned (its window now in ``base``) changes nothing for the jobs
        # behind it: compare ``base`` with the old one plus those windows, and count each
        # window as a loss for the jobs ahead of it.
        adjusted: Profile | None = None
        for held in running:
            k = position.get(held.job.job_id, -1)
            if (
                k >= 0
                and held.start_time == prev.starts[k]
                and held.procs == prev.procs[k]
                and held.expected_end == held.start_time + prev.durations[k]
                and held.procs > 0
                and held.expected_end > held.start_time
            ):
                if adjusted is None:
                    adjusted = prev.base.copy()
                adjusted.reserve(held.start_time, prev.durations[k], held.procs)
                losses.add(held.start_time, held.expected_end)
                planned.add(k)
        changed = _base_diff(adjusted if adjusted is not None else prev.base, base, now, gains, losses)
    free = view.free_procs
    starts: list[Job] = []
    reservations: dict[int, float] = {}
    ids: list[int] = []
    procs_of: list[int] = []
    durations: list[float] = []
    placed: list[float] = []
    marks: list[tuple[int, list[float], list[int]]] = []
    next_old = 0
    done = 0
    if prev is not None and not changed:
        profile, done, next_old, free = _reuse_prefix(
            prev, queue, now, planned, free, starts, reservations, ids, procs_of, durations, placed, marks, profile
        )
    times, frees = profile.times, profile.free
    first_free: dict[int, float] = {}
    shape_fit: dict[tuple[int, float], float] = {}
    next_mark = done
    for job in queue[done:] if done else queue:
        if len(ids) >= next_mark:
            marks.append((len(ids), times.copy(), frees.copy()))
            next_mark = len(ids) + _MARK_EVERY
        job_id = job.job_id
        procs = job.requested_procs
        duration = job.requested_time
        k = position.get(job_id, -1)
        if k >= 0:
            assert prev is not None
            if prev.procs[k] != procs or prev.durations[k] != duration:
                k = -1
            elif k < next_old:
                # Two jobs swapped places: the repair does not apply.
                return _repair(view, now, None, order)
        if k >= 0:
            assert prev is not None
            # Old jobs ahead of this one that left the queue free their old windows.
            for gone in range(next_old, k):
                if gone not in planned and prev.durations[gone] > 0 and prev.procs[gone] > 0:
                    at = prev.starts[gone]
                    gains.add(at, at + prev.durations[gone])
            next_old = k + 1
            r = prev.starts[k]
            if r < now or duration <= 0 or procs <= 0:
                start = _place(profile, times, frees, first_free, shape_fit, procs, duration, now, now)
            else:
                found = None
                if gains.his:
                    # A gain may let the job start earlier: search the starts whose window meets one.
                    floor = _first_free(times, frees, first_free, procs, now)
                    same = shape_fit.get((procs, duration))
                    if same is not None and same > floor:
                        floor = same
                    if floor < r:
                        found = _gain_fit(profile, gains, procs, duration, floor, r)
                if found is not None:
                    start = found
                    profile.take(start, duration, procs)
                    shape_fit[procs, duration] = start
                elif not losses.meets(r, r + duration) or profile.fits(procs, duration, r):
                    start = r
                    profile.take(start, duration, procs)
                    shape_fit[procs, duration] = r
                else:
                    start = _place(profile, times, frees, first_free, shape_fit, procs, duration, r, now)
            if start != r and duration > 0 and procs > 0:
                gains.add(r, r + duration)
                losses.add(start, start + duration)
        else:
            start = _place(profile, times, frees, first_free, shape_fit, procs, duration, now, now)
            if duration > 0 and procs > 0:
                losses.add(start, start + duration)
        if start <= now and procs <= free:
            starts.append(job)
            free -= procs
        else:
            reservations[job_id] = start
        ids.append(job_id)
        procs_of.append(procs)
        durations.append(duration)
        placed.append(start)
    schedule = ConservativeSchedule(now, base, ids, procs_of, durations, placed, ranks, marks)
    return Plan(starts=starts, reservations=reservations), schedule


def _reuse_prefix(
    prev: ConservativeSchedule,
    queue: list[Job],
    now: float,
    planned: set[int],
    free: int,
    starts: list[Job],
    reservations: dict[int, float],
    ids: list[int],
    procs_of: list[int],
    durations: list[float],
    placed: list[float],
    marks: list[tuple[int, list[float], list[int]]],
    profile: Profile,
) -> tuple[Profile, int, int, int]:
    """Copy the head of the old schedule that cannot change, without looking at its jobs again.

    When the running jobs give the same profile from ``now`` on (apart from the jobs started as
    planned), the old jobs ahead of the first one that left the queue otherwise, moved in the
    order, was reserved before ``now`` or has a new job ahead of it, keep their starts: no gain
    can reach them, and a job started as planned was placed around them. Their profile is the
    old one at that point (rebuilt from the last mark before it) less the windows of the jobs
    started as planned that were behind them. Fills the output lists; returns the profile to go
    on with, the number of new-queue jobs done, the old position reached and the free processors.
    """
    old_ids, old_starts, old_procs, old_durations = prev.ids, prev.starts, prev.procs, prev.durations
    n_old, n_new = len(old_ids), len(queue)
    k = 0
    i = 0
    while k < n_old:
        if k in planned:
            k += 1
            continue
        if i < n_new:
            job = queue[i]
            procs = old_procs[k]
            duration = old_durations[k]
            if (
                job.job_id == old_ids[k]
                and old_starts[k] >= now
                and job.requested_procs == procs
                and job.requested_time == duration
                and procs > 0
                and duration > 0
            ):
                k += 1
                i += 1
                continue
        break
    if k == 0:
        return profile, 0, 0, free
    # The profile at old position k, now on, with every job started as planned in it.
    positions = [m[0] for m in prev.marks]
    m = bisect_right(positions, k) - 1
    at, mark_times, mark_free = prev.marks[m]
    rebuilt = Profile(profile.capacity, prev.now)
    rebuilt.times = mark_times.copy()
    rebuilt.free = mark_free.copy()
    for j in range(at, k):
        rebuilt.take(old_starts[j], old_durations[j], old_procs[j])
    late = [j for j in planned if j >= k]
    for j in late:
        rebuilt.take(old_starts[j], old_durations[j], old_procs[j])
    rebuilt.advance(now)
    # The old marks up to k, corrected the same way (shared when nothing needs correcting).
    shift = 0
    ordered_planned = sorted(planned)
    for pos, mark_times, mark_free in prev.marks[: m + 1]:
        while shift < len(ordered_planned) and ordered_planned[shift] < pos:
            shift += 1
        behind = ordered_planned[shift:]
        if not behind and now == prev.now:
            marks.append((pos - shift, mark_times, mark_free))
            continue
        fixed = Profile(profile.capacity, prev.now)
        fixed.times = mark_times.copy()
        fixed.free = mark_free.copy()
        for j in behind:
            fixed.take(old_starts[j], old_durations[j], old_procs[j])
        fixed.advance(now)
        marks.append((pos - shift, fixed.times, fixed.free))
    n = 0
    for j in range(k):
        if j in planned:
            continue
        job = queue[n]
        n += 1
        start = old_starts[j]
        procs = old_procs[j]
        if start <= now and procs <= free:
            starts.append(job)
            free -= procs
        else:
            reservations[job.job_id] = start
        ids.append(job.job_id)
        procs_of.append(procs)
        durations.append(old_durations[j])
        placed.append(start)
    return rebuilt, i, k, free


def _first_free(times: list[float], frees: list[int], cache: dict[int, float], procs: int, now: float) -> float:
    """The first instant ``>= now`` with ``procs`` free. Within a pass the profile only loses
    processors, so it only moves later: ``cache`` keeps it per width (as in the full pass)."""
    after = cache.get(procs, now)
    i = bisect_right(times, after) - 1
    n = len(times)
    while i < n and frees[i] < procs:
        i += 1
    if i < n and times[i] > after:
        after = times[i]
    cache[procs] = after
    return after


def _place(
    profile: Profile,
    times: list[float],
    frees: list[int],
    first_free: dict[int, float],
    shape_fit: dict[tuple[int, float], float],
    procs: int,
    duration: float,
    after: float,
    now: float,
) -> float:
    """``profile.place(procs, duration, after)``, searching from the later of ``after``, the
    first instant with ``procs`` free and the start of the last job of the same shape (neither
    can be beaten within a pass, where the profile only loses processors; as in the full pass)."""
    floor = _first_free(times, frees, first_free, procs, now)
    if floor < after:
        floor = after
    shape = (procs, duration)
    previous = shape_fit.get(shape)
    if previous is not None and previous > floor:
        floor = previous
    start = profile.place(procs, duration, floor)
    shape_fit[shape] = start
    return start


def _gain_fit(
    profile: Profile, gains: _Intervals, procs: int, duration: float, after: float, before: float
) -> float | None:
    """The earliest start in ``[after, before)`` whose window meets a gain and fits ``profile``
    (``None`` when there is none): the only starts there that can fit (see ``replan``), given
    that none fits before ``after``."""
    los, his = gains.los, gains.his
    k = bisect_right(his, after)
    covered = after
    n = len(los)
    while k < n:
        lo = los[k] - duration
        if lo >= before:
            return None
        if lo < covered:
            lo = covered
        hi = his[k] if his[k] < before else before
        if lo < hi:
            found = profile.earliest_fit_before(procs, duration, lo, hi)
            if found is not None:
                return found
            covered = hi
        k += 1
    return None


def _first(pair: tuple[Any, Job]) -> Any:
    return pair[0]


def _merged_order(
    view: SiteView, now: float, prev: ConservativeSchedule, position: dict[int, int], order: QueueOrder
) -> tuple[list[Job], list[Any]]:
    """The queue in ``order`` (a rank that depends on the job alone): the old jobs in their old
    order, merged with the new ones sorted by rank. Same order as sorting the whole queue."""
    assert prev.ranks is not None
    kept: dict[int, Job] = {}
    fresh = []
    for job in view.queue:
        k = position.get(job.job_id, -1)
        if k >= 0 and prev.procs[k] == job.requested_procs and prev.durations[k] == job.requested_time:
            kept[job.job_id] = job
        else:
            fresh.append((order.rank(job, view, now), job))
    fresh.sort(key=_first)
    queue: list[Job] = []
    ranks: list[Any] = []
    old_ranks = prev.ranks
    n_fresh = len(fresh)
    f = 0
    for k, job_id in enumerate(prev.ids):
        held = kept.get(job_id)
        if held is None:
            continue
        key = old_ranks[k]
        while f < n_fresh and fresh[f][0] < key:
            ranks.append(fresh[f][0])
            queue.append(fresh[f][1])
            f += 1
        ranks.append(key)
        queue.append(held)
    for key, job in fresh[f:]:
        ranks.append(key)
        queue.append(job)
    return queue, ranks
