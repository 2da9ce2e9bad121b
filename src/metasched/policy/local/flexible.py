"""Flexible Backfilling on a cluster of heterogeneous machines (seed 004)."""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from metasched.model.grid import mask_bits
from metasched.model.job import Job
from metasched.model.qos import qos_of
from metasched.policy.meta.two_level_base import ClusterOrder, ClusterView, MachinePlan, MachineScheduler


class FlexibleBackfill(MachineScheduler):
    """EASY backfilling whose queue order is a pluggable priority, on machines of one cluster.

    Source: seed 004 (Pasquali et al. 2010) sections 2 and 4 ("Flexible Backfilling": EASY with the
    queue ordered by priorities recomputed at each scheduling event; "a job is scheduled on the
    first found eligible machine with the highest computing power"). With
    :class:`~metasched.policy.priority.arrival.ArrivalOrder` it is the section-5 "No Heuristics"
    EASY backfilling.

    How it maps to EASY on one processor pool: a job runs on ONE machine, so "fits" means: some
    machine has the job's CPUs free, can run all its licences, and one copy of each licence is
    free. One pass walks the queue in order and starts each job that fits on the most powerful
    such machine (ties: machine index) until the first job that does not fit, the *head*. The
    head's reservation is the (machine, instant) at which it could start soonest: for each
    machine able to host it, the first instant its running jobs (expected ends: start + estimate
    on that machine; an end in the past counts as ``now``) free enough CPUs, but not before one
    copy of each of its licences is free (from the expected ends of the licence holders); the
    earliest such instant is the *shadow* and its machine the *reserved machine* (ties: power
    order). As in EASY, *extra* CPUs of the reserved machine and extra copies of the head's
    licences are what remains at the shadow beyond the head's need. Later jobs backfill now on
    the most powerful fitting machine that does not delay the head: on the reserved machine they
    must end by the shadow or fit in the extra CPUs (which shrink), and for a licence the head
    needs they must end by the shadow or use an extra copy (which shrink).

    Only jobs no wider than the largest free CPU count can start in a pass, so only those are
    sorted; of the others only the first in queue order is looked at (it is the head when it
    comes before every candidate that fits). The decisions are those of a walk of the full order.

    Invariant: starts fit the free CPUs of their machine and the free licence copies; never delays
    the head's reservation (as estimated). Tie-break: queue order, then machine power order.
    """

    key: ClassVar[str] = "flexible"

    def __init__(self, *, order: ClusterOrder | None = None) -> None:
        if order is None:
            from metasched.policy.priority.weighted import WeightedHeuristics

            order = WeightedHeuristics()
        super().__init__(order=order)

    def plan(self, view: ClusterView, now: float) -> MachinePlan:
        cols = view.queue
        plan = MachinePlan()
        n = len(cols)
        if n == 0:
            return plan
        prio = self.order.priority(view, now)
        need_all = cols.need
        jobs = cols.jobs
        cluster = view.cluster
        bench = [m.benchmark for m in cluster.machines]
        mmask = cluster.licence_masks
        free = list(view.free_cpus)
        lic_free = list(view.licence_free)
        min_cpus = int(need_all.min())
        avail = [m for m in cluster.power_order if free[m] >= min_cpus]
        starts = plan.starts

        def start(job: Job, m: int, lics: list[int]) -> None:
            starts.append((job, m))
            free[m] -= job.requested_procs
            for lic in lics:
                lic_free[lic] -= 1
            if free[m] < min_cpus:
                avail.remove(m)

        # Only jobs with at most the largest free CPU count may start in this pass: sort those
        # (candidates) by (-priority, row); of the others only the first in that order matters,
        # as it is the head if it comes before every candidate that fits.
        fits = need_all <= max(free)
        cand = np.flatnonzero(fits)
        cand = cand[np.argsort(-prio[cand], kind="stable")]
        best_other = -1
        if cand.size < n:
            best_other = int(np.argmax(np.where(fits, -np.inf, prio)))
            other_key = (-float(prio[best_other]), best_other)
        order = cand.tolist()
        # Phase 1: start jobs in queue order until the first that does not fit (the head).
        head: Job | None = None
        k = 0
        while k < len(order):
            row = order[k]
            if best_other >= 0 and other_key < (-float(prio[row]), row):
                head = jobs[best_other]
                break
            k += 1
            job = jobs[row]
            need = job.requested_procs
            q = qos_of(job)
            jm = q.licence_mask
            lics = mask_bits(jm) if jm else []
            chosen = -1
            if not lics or all(lic_free[lic] >= 1 for lic in lics):
                for m in avail:
                    if free[m] >= need and mmask[m] & jm == jm:
                        chosen = m
                        break
            if chosen < 0:
                head = job
                break
            start(job, chosen, lics)
        if head is None and best_other >= 0:
            head = jobs[best_other]
        if head is None:
            return plan
        res_m, shadow, extra, extra_lic = self._reserve(view, now, head, free, lic_free, starts)
        plan.reservation = (head.job_id, res_m, shadow)
        head_mask = qos_of(head).licence_mask
        # Phase 2: backfill later jobs that fit some machine now and do not delay the head.
        if not avail or k >= len(order):
            return plan
        # Vectorised pre-filter, a superset of the jobs that can start (free CPUs, extra CPUs and
        # free licences only shrink during the pass; the loop below re-checks everything).
        rest = cand[k:]
        need_r = need_all[rest]
        other = max((free[m] for m in avail if m != res_m), default=0)
        ok = need_r <= other
        if res_m in avail:
            fits_res = need_r <= free[res_m]
            if fits_res.any():
                short = now + cols.work[rest] / bench[res_m] <= shadow
                ok |= fits_res & (short | (need_r <= extra))
        blocked = 0
        for lic, copies in enumerate(lic_free):
            if copies < 1:
                blocked |= 1 << lic
        if blocked:
            ok &= (cols.licence_mask[rest] & blocked) == 0
        max_free = max(free[m] for m in avail)
        for row in rest[ok].tolist():
            if not avail:
                break
            job = jobs[row]
            need = job.requested_procs
            if need > max_free:
                continue
            q = qos_of(job)
            jm = q.licence_mask
            lics = mask_bits(jm) if jm else []
            if lics and any(lic_free[lic] < 1 for lic in lics):
                continue
            shared = [lic for lic in lics if lic in extra_lic] if jm & head_mask else []
            for m in avail:
                if free[m] < need or mmask[m] & jm != jm:
                    continue
                late = now + job.requested_time * q.benchmark / bench[m] > shadow
                if late:
                    if m == res_m and need > extra:
                        continue
                    if shared and any(extra_lic[lic] < 1 for lic in shared):
                        continue
                    if m == res_m:
                        extra -= need
                    for lic in shared:
                        extra_lic[lic] -= 1
                start(job, m, lics)
                max_free = max((free[a] for a in avail), default=0)
                break
        return plan

    @staticmethod
    def _reserve(
        view: ClusterView,
        now: float,
        job: Job,
        free: list[int],
        lic_free: list[int],
        starts: list[tuple[Job, int]],
    ) -> tuple[int, float, int, dict[int, int]]:
        """(reserved machine, shadow, extra CPUs, extra licence copies) of the blocked ``job``."""
        cluster = view.cluster
        mmask = cluster.licence_masks
        need = job.requested_procs
        q = qos_of(job)
        jm = q.licence_mask
        lics = mask_bits(jm)
        mcpus = cluster.machine_cpus
        capable = [m for m in cluster.power_order if mcpus[m] >= need and mmask[m] & jm == jm]
        if not capable:
            raise ValueError(
                f"job {job.job_id} ({need} CPUs, licences {lics}) fits no machine of cluster {cluster.name!r}"
            )
        for lic in lics:
            if lic >= len(cluster.licences) or cluster.licences[lic].copies < 1:
                raise ValueError(f"job {job.job_id} needs licence {lic}, of which cluster {cluster.name!r} has no copy")
        inf = float("inf")
        t_lic = now
        lic_rel: dict[int, list[float]] = {}
        blocked = [lic for lic in lics if lic_free[lic] < 1]
        if lics:
            lic_rel = {lic: [] for lic in lics}
            for r in view.running:
                if r.licence_mask & jm:
                    end = r.expected_end if r.expected_end > now else now
                    for lic in lics:
                        if r.licence_mask >> lic & 1:
                            lic_rel[lic].append(end)
        machines = cluster.machines
        started: dict[int, list[tuple[float, int]]] = {}
        for sj, m in starts:
            sq = qos_of(sj)
            end = now + sj.requested_time * sq.benchmark / machines[m].benchmark
            started.setdefault(m, []).append((end, sj.requested_procs))
            if sq.licence_mask & jm:
                for lic in lics:
                    if sq.licence_mask >> lic & 1:
                        lic_rel[lic].append(end)
        for lic in blocked:
            t_lic = max(t_lic, min(lic_rel[lic], default=inf))
        on = view.by_machine()

        def releases(m: int) -> list[tuple[float, int]]:
            rel = [(r.expected_end if r.expected_end > now else now, r.cpus) for r in on[m].values()]
            rel.extend(started.get(m, ()))
            rel.sort()
            return rel

        best_m = -1
        best_t = inf
        for m in capable:
            if free[m] >= need:
                t = t_lic
            else:
                avail = free[m]
                t = inf
                for end, cpus in releases(m):
                    if end >= best_t:
                        break
                    avail += cpus
                    if avail >= need:
                        t = max(end, t_lic)
                        break
            if t < best_t:
                best_t, best_m = t, m
                if best_t <= max(now, t_lic):
                    break
        if best_m < 0:
            raise ValueError(f"job {job.job_id} can never start in cluster {cluster.name!r} (licences never free)")
        extra = free[best_m] + sum(c for e, c in releases(best_m) if e <= best_t) - need
        extra_lic = {lic: lic_free[lic] + sum(1 for e in lic_rel.get(lic, ()) if e <= best_t) - 1 for lic in lics}
        return best_m, best_t, extra, extra_lic
