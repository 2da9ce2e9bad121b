"""Min-min batch claiming for many small tasks."""

from __future__ import annotations

from collections.abc import Sequence
from operator import attrgetter
from typing import ClassVar

import numpy as np

from metasched.model.etc import FloatArray
from metasched.model.job import Job
from metasched.policy.claim.base import ClaimPolicy, ClaimWorld, FreeResources, estimate_at, fits, mem_budget
from metasched.policy.mapping.base import min_min_rounds

_ARRIVAL = attrgetter("submit_time", "job_id")


class MinMinClaim(ClaimPolicy):
    """Hands the asker the jobs a min-min mapping of all ready jobs onto all placeholders puts on it now.

    The mapping is the simulator's own :class:`~metasched.policy.mapping.min_min.MinMin` over an
    ETC matrix of the ready jobs x every placeholder slot (ready time: its free instant), run only
    until every asker slot has its first job (:func:`first_on_slots`: the same rounds, so the same
    decision as the full mapping, in the rounds up to there instead of one per ready job).

    Source: Min-min of Braun et al. / Maheswaran et al. (seed 002, section 3): repeatedly map the
    (job, machine) pair with the smallest completion time, the machine being here any site's
    placeholder slot (:class:`~metasched.policy.claim.base.SlotBoard`), the completion its free
    instant plus ``estimates[site]``. Many small tasks thus go, shortest first, where they finish
    soonest; a batch claim (``limit`` > 1) takes every task min-min maps on the asker's slots now.

    Invariant: every job handed over is the minimum-completion pair of the step that mapped it
    (never a job that some other placeholder would complete earlier before it). Tie-break:
    Min-min's (lowest task index in ``(submit_time, job_id)`` order, then lowest machine: the
    asker's slots come first). Jobs that do not fit the asker are never mapped onto its slots.
    """

    key: ClassVar[str] = "min-min"
    needs_world: ClassVar[bool] = True

    def select(
        self,
        ready: Sequence[Job],
        site: str,
        free: FreeResources,
        now: float,
        limit: int = 1,
        world: ClaimWorld | None = None,
    ) -> list[int]:
        if not ready:
            return []
        # Machines: the asker's slots first (Min-min breaks ties by the lowest machine index, so a
        # tie goes to the asker), then every other placeholder by site name.
        n_asker = max(1, min(limit, free.cpus))
        machines: list[str] = [site] * n_asker
        avail: list[float] = [now] * n_asker
        for name, slots in sorted((world.sites if world is not None else {}).items()):
            for t in slots.free_times(now):
                machines.append(name)
                avail.append(t)
        jobs = sorted(ready, key=_ARRIVAL)
        mem = mem_budget(free)
        nd, nc = free.nodes, free.node_cpus  # the asker's shape (fits_shape)
        if len(machines) == n_asker:  # nobody else: only the jobs that fit the asker can be mapped
            jobs = [j for j in jobs if fits(j, free.cpus, mem, free.remaining_s, free.licences, nodes=nd, node_cpus=nc)]
            if not jobs:
                return []
        names = sorted(set(machines))
        # One pass: each job's row of estimates and whether it fits the asker alone, decided once
        # per distinct (estimates table, demand): jobs of a kind share their table (estimates_at)
        # and many jobs ask the same.
        seen: dict[tuple[object, ...], tuple[int, bool]] = {}
        rows: list[tuple[float, ...]] = []
        index: list[int] = []
        too_big: list[bool] = []
        for j in jobs:
            attrs = j.attrs
            lic = attrs.get("licences")
            key = (
                id(attrs.get("estimates")),
                j.requested_time,
                j.requested_procs,
                attrs.get("mem_mb"),
                tuple(lic.items()) if lic else (),
                attrs.get("nodes"),
                attrs.get("tasks"),
            )
            known = seen.get(key)
            if known is None:
                too = not fits(j, free.cpus, mem, free.remaining_s, free.licences, nodes=nd, node_cpus=nc)
                known = seen[key] = (len(rows), too)
                rows.append(tuple(estimate_at(j, s) for s in names))
            index.append(known[0])
            too_big.append(known[1])
        col = {s: i for i, s in enumerate(names)}
        table = np.array(rows, dtype=float).reshape(len(rows), len(names))
        etc = table[np.array(index)][:, [col[s] for s in machines]]
        # A job that does not fit the asker alone never goes on its slots.
        etc[np.array(too_big, dtype=bool), :n_asker] = np.inf
        # Only the first job Min-min maps on each asker slot can start now: map until every asker
        # slot has one (the steps up to there are the full mapping's, so its firsts are the same).
        firsts = first_on_slots(etc, np.array(avail, dtype=float), n_asker)
        chosen: list[int] = []
        cpus, mem, lic = free.cpus, mem_budget(free), dict(free.licences)
        for r in sorted(firsts, key=lambda r: (etc[r, 0], r)):
            j = jobs[r]
            if len(chosen) < limit and fits(j, cpus, mem, free.remaining_s, lic, nodes=nd, node_cpus=nc):
                chosen.append(j.job_id)
                cpus -= j.requested_procs
                if mem is not None:
                    mem -= int(j.attrs.get("mem_mb", 0) or 0)
                for name, count in (j.attrs.get("licences") or {}).items():
                    lic[name] -= count
        return chosen


def first_on_slots(etc: FloatArray, ready: FloatArray, n_first: int) -> list[int]:
    """The task Min-min maps first on each of the machines ``0 .. n_first - 1`` (those it maps any on).

    The rounds are :func:`~metasched.policy.mapping.base.min_min_rounds` (same global minimum,
    same ties: lowest task, then lowest machine), stopped as soon as each of those machines has its
    first task, or every task is mapped: each round depends only on the rounds before it, so the
    firsts are those of the full mapping (:class:`~metasched.policy.mapping.min_min.MinMin`), at
    the cost of the rounds up to there instead of one round per task.
    """
    first: dict[int, int] = {}
    for task, machine in min_min_rounds(etc, ready):
        if machine < n_first and machine not in first:
            first[machine] = task
            if len(first) == n_first:
                break
    return [first[j] for j in sorted(first)]
