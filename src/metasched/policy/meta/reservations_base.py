"""The ``reservations`` family of the one meta-policy contract (:mod:`metasched.policy.meta.base`):
where a job's copies go, and whether a copy may start.

Source: Sabin, Kettimuthu, Rajan, Sadayappan, "Scheduling of Parallel Jobs in a Heterogeneous
Multi-Site Environment" (JSSPP 2003; seed 000), sections 4-7; the multiple-simultaneous-requests
idea is Subramani et al. (HPDC 2002, seed 000 ref. [31]).

A meta-scheduler makes two decisions, both pure (a snapshot and ``now`` in, a decision out):

1. :meth:`MetaPolicy.place <metasched.policy.meta.base.MetaPolicy.place>` (abstract; the driver
   calls it as :meth:`MetaScheduler.select_sites`): at submission, the sites that receive a *copy*
   of the job (a :class:`~metasched.model.job.Job` with ``run_time``/``requested_time`` scaled to
   the site). Each site's unchanged local scheduler then queues its copy like any other job.
2. :meth:`MetaScheduler.decide_start`: when a site's local scheduler wants to start its copy,
   the site asks the meta-scheduler, which sees every other live copy (:class:`CopyOffer`: its
   expected start at that site, from that site's current :class:`~metasched.policy.base.Plan`)
   and answers with a :class:`StartDecision`: start here and cancel (or kill) other copies, or
   deny (the copy here is removed). The driver applies it atomically: no other copy can start in
   between. The default is the start-based rule of Greedy-MR: the first site able to start the
   job runs it and every other copy is cancelled.

Message protocol (section 7), counted by the driver: a start attempt at a site while ``m`` copies
are live costs ``2 (m - 1)`` messages (ask every other holder, get its answer); an accepted start
costs ``m - 1`` more (tell them). A job with ``K`` copies that starts at the first attempt thus
costs ``3 (K - 1)``. Selecting sites by completion time costs ``2 N`` more per job
(:meth:`MetaScheduler.selection_messages`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar, Literal

from metasched.model.job import Job
from metasched.policy.meta.base import CopySites, Family, MetaPolicy

Selection = Literal["load", "completion"]
SELECTIONS: tuple[str, ...] = ("load", "completion")


@dataclass(frozen=True, slots=True)
class MetaSiteView:
    """One site as the meta-scheduler sees it when a job arrives.

    ``load_s`` is the *instantaneous load* of section 4: the remaining processor-seconds of the
    jobs queued or running there (by their estimates) divided by the site's processors.
    ``estimate`` is the job's estimated run time at this site (scaled by the site's speed for the
    job's application class, plus any data transfer). ``expected_completion`` is the instant the
    site's current schedule would complete the job; it is only filled (not ``None``) when the
    meta-scheduler asks for it (:meth:`MetaScheduler.needs_completion_times`).
    """

    index: int
    name: str
    total_procs: int
    load_s: float
    estimate: float
    expected_completion: float | None = None


@dataclass(frozen=True, slots=True)
class CopyOffer:
    """Another live copy of a job, seen when one of its copies is about to start.

    ``expected_start`` is ``now`` when that site's plan starts the copy now, its reservation when
    it holds one, ``inf`` when unknown (EASY keeps no reservation for non-head jobs); for a
    running copy (cancel-slower-only) it is the instant it started.
    """

    site: int
    estimate: float
    expected_start: float
    is_running: bool = False

    @property
    def expected_completion(self) -> float:
        return self.expected_start + self.estimate


@dataclass(frozen=True, slots=True)
class StartDecision:
    """The answer to "may this copy start now?".

    ``start`` False means the copy is denied and removed from its site. When ``start`` is True,
    ``cancel`` lists the sites whose queued copies are removed and ``kill`` the sites whose
    running copy is killed (its processor time is wasted).
    """

    start: bool
    cancel: tuple[int, ...] = ()
    kill: tuple[int, ...] = ()


DENY = StartDecision(start=False)


class MetaScheduler(MetaPolicy[CopySites, list[int]]):
    """The ``reservations`` adapter: chooses the sites of each job's copies (:meth:`place`) and
    arbitrates their starts (:meth:`decide_start`, start-based by default).

    Invariants every implementation keeps: ``select_sites`` returns between 1 and ``k`` distinct
    valid site indices; ``decide_start`` never lets two copies run at once (a start either
    cancels/kills every other live copy or keeps only queued ones that can still be denied).
    Tie-break, unless a scheme says otherwise: the lower site index.
    """

    family: ClassVar[Family] = "reservations"
    #: True for schemes whose starts are decided by expected completion (needs reservations).
    is_completion_based: ClassVar[bool] = False

    def __init__(self, *, k: int = 1, selection: Selection = "load") -> None:
        if k < 1:
            raise ValueError(f"{type(self).__name__}: k must be at least 1, got {k}")
        if selection not in SELECTIONS:
            raise ValueError(f"{type(self).__name__}: selection must be one of {SELECTIONS}, got {selection!r}")
        self.k = k
        self.selection: Selection = selection

    def select_sites(self, job: Job, views: Sequence[MetaSiteView], now: float) -> list[int]:
        """Indices of the sites that get a copy of ``job`` (submitted at ``now``): :meth:`place`."""
        return self.place(CopySites(job, views, now))

    def needs_completion_times(self, n_sites: int) -> bool:
        """Whether ``select_sites`` needs ``MetaSiteView.expected_completion`` (a query of every site)."""
        return self.selection == "completion" and self.k < n_sites

    def selection_messages(self, n_sites: int) -> int:
        """Messages spent choosing the sites of one job: ``2 N`` when every site is queried."""
        return 2 * n_sites if self.needs_completion_times(n_sites) else 0

    def decide_start(
        self, job: Job, site: int, estimate: float, others: Sequence[CopyOffer], now: float
    ) -> StartDecision:
        """May the copy of ``job`` at ``site`` (estimated ``estimate`` there) start at ``now``?

        Default, start-based (Greedy-MR): yes, cancelling every other queued copy; a job never
        restarts, so a running copy elsewhere means no.
        """
        if any(o.is_running for o in others):
            return DENY
        return StartDecision(start=True, cancel=tuple(o.site for o in others))

    def choose(self, views: Sequence[MetaSiteView]) -> list[int]:
        """The ``k`` best sites by this scheme's ``selection`` (ties: lower index)."""
        if not views:
            raise ValueError("no sites to choose from")
        if self.selection == "completion" and self.k < len(views):
            return completion_ranked(views)[: self.k]
        return load_ranked(views)[: self.k]

    def __repr__(self) -> str:
        return f"{type(self).__name__}(k={self.k}, selection={self.selection!r})"


def load_ranked(views: Sequence[MetaSiteView]) -> list[int]:
    """Site indices by increasing instantaneous load, ties by lower index."""
    return [v.index for v in sorted(views, key=lambda v: (v.load_s, v.index))]


def completion_ranked(views: Sequence[MetaSiteView]) -> list[int]:
    """Site indices by increasing expected completion, ties by lower index."""
    for v in views:
        if v.expected_completion is None:
            raise ValueError(f"site {v.index} ({v.name!r}): expected_completion is needed to select by completion")
    return [v.index for v in sorted(views, key=lambda v: (v.expected_completion, v.index))]


def best_completion(others: Sequence[CopyOffer]) -> float:
    """Earliest expected completion among ``others`` (``inf`` when none)."""
    return min((o.expected_completion for o in others), default=math.inf)
