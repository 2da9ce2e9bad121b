"""Replay of a workload through a meta-scheduler over several heterogeneous sites.

Source: seed 000 (Sabin et al. 2003), sections 3-7. Each site is a :class:`~metasched.model.site.Site`
whose ``time_factor(app_class)`` scales a job's run time and estimate there. At submission the
meta-scheduler picks the sites that get a *copy* of the job (a ``Job.copy`` with ``run_time`` and
``requested_time`` scaled to the site, plus the data-transfer time ``job.attrs["transfer_s"]``
when the site is not the job's ``home_site``), each site's unchanged local scheduler queues it,
and when a local scheduler wants to start a copy the meta-scheduler decides
(:meth:`~metasched.policy.meta.reservations_base.MetaScheduler.decide_start`), seeing every other live copy
with its expected start from that site's current plan. The decision is applied atomically.

Semantics (see :mod:`metasched.sim.engine`): at each instant, release the jobs ending then, add
the jobs submitted then (in ``(submit_time, job_id)`` order, each seeing the loads left by the
previous one), then run scheduling passes: the lowest-indexed site with changes is planned and
its starts arbitrated; a cancellation, denial or kill changes a site again, so passes repeat
until no site changed (each repeat removes a copy, so this ends). A site where no queued copy fits
the free processors is not planned (no local scheduler could start anything there).

A site asked about a copy (a start elsewhere) answers from its latest plan, as a remote batch
system would answer from the schedule it holds: a cancellation or an early end since then leaves
those reservations feasible, if perhaps later than a new pass would give (an arrival ahead in an
efficacy queue may also make one optimistic until the site's next pass).
Plans are cached: a site's plan is recomputed only after its queue or running set changed
otherwise than by starting the plan's own starts (which leaves the other reservations as they
were for any queue order that does not depend on ``now``, as FCFS and efficacy do);
``check=True`` re-plans whenever a plan is used, raises if a cached plan differs, and audits each
(reservations only for live copies, never more processors than the site has).
Each site keeps its queue as :class:`~metasched.policy.base.QueueColumns` too, handed to the
local scheduler in :attr:`~metasched.policy.base.SiteView.columns` (conservative backfilling then
plans in its compiled kernel; the plan is the same); ``compiled=False`` leaves them out (the
reference path, pure Python; ``check=True`` compares the two at every plan).
For the schemes it ports, the whole event loop runs compiled by default
(:mod:`metasched.sim._multisite_kernel`, identical results); this driver is its reference.

Licences (``licences``, per site ``{name: copies}``; a job's needs in ``job.attrs["licences"]``):
a copy needing licences reaches its site's queue only once it holds them there (taken when it is
admitted, given back when it ends, is cancelled, denied or killed), so a site never runs, nor
queues, more copies of a licence than it holds; copies waiting for one are admitted first-fit in
the order they arrived, whenever copies are given back. Only sites holding enough copies are
eligible. This gate is not part of seed 000 (whose sites hold no licences) and runs on this
module's driver only (the compiled loop does not port it).

Messages follow the protocol of section 7 (:mod:`metasched.policy.meta.reservations_base`): a start attempt
with ``m`` live copies costs ``2 (m - 1)``, an accepted one ``m - 1`` more, and selecting sites by
completion time ``2 N`` per job; when a job ends while copies are still queued (cancel-slower-only
keeps those at faster sites), each is cancelled with one message. The driver requires
``run_time <= requested_time``: the expected completions the meta-scheduler compares are only
meaningful when jobs end by their estimates.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property

import numpy as np

from metasched.model.job import Job
from metasched.model.profile import Profile
from metasched.model.site import Site
from metasched.policy.base import LocalScheduler, Plan, QueueColumns, SiteView
from metasched.policy.local.conservative import ConservativeBackfill
from metasched.policy.meta.reservations_base import CopyOffer, MetaScheduler, MetaSiteView, StartDecision
from metasched.policy.priority.efficacy import EFFICACY_ATTR
from metasched.sim.schedule import Schedule
from metasched.sim.site import QueueView, SiteState

TRANSFER_ATTR = "transfer_s"
#: ``job.attrs`` key of a job's licence needs, ``{name: copies}`` (as :mod:`metasched.sim.gridsim` reads it).
LICENCES_ATTR = "licences"
ProgressFn = Callable[[int], None]
_START_ALONE = StartDecision(start=True)


_COLUMN_DTYPES = {
    "job_id": np.int64,
    "submit_time": np.float64,
    "run_time": np.float64,
    "requested_time": np.float64,
    "requested_procs": np.int64,
    "home_site": np.int64,
    "app_class": np.int64,
    "transfer_s": np.float64,
}


@dataclass(frozen=True, eq=False)
class JobColumns:
    """A workload as aligned NumPy columns: the :class:`~metasched.model.job.Job` fields this driver
    reads (SWF names), for runs that need no ``Job`` objects (an experiment's sweep builds tens of
    thousands per simulation otherwise; ~0.15 s of a 0.3 s run at light load).

    ``transfer_s`` is the jobs' ``attrs["transfer_s"]`` (0.0 where absent). Invariant: a run on
    ``JobColumns.from_jobs(jobs)`` gives the same results as a run on ``jobs``
    (``tests/sim/test_multisite_kernel.py``).
    """

    job_id: np.ndarray
    submit_time: np.ndarray
    run_time: np.ndarray
    requested_time: np.ndarray
    requested_procs: np.ndarray
    home_site: np.ndarray
    app_class: np.ndarray
    transfer_s: np.ndarray

    def __post_init__(self) -> None:
        # one dtype per column (int64 or float64, one dimension): the compiled loop is then
        # compiled once, not once per dtype it is handed
        n = None
        for name, dtype in _COLUMN_DTYPES.items():
            raw = np.asarray(getattr(self, name))
            if raw.size and not np.can_cast(raw.dtype, dtype, casting="same_kind"):
                raise ValueError(f"JobColumns: column {name} of dtype {raw.dtype} cannot be held as {dtype.__name__}")
            column = np.asarray(raw, dtype=dtype)
            if column.ndim != 1:
                raise ValueError(f"JobColumns: column {name} must have one dimension, got shape {column.shape}")
            if n is None:
                n = len(column)
            elif len(column) != n:
                raise ValueError(f"JobColumns: column {name} has {len(column)} rows, job_id has {n}")
            object.__setattr__(self, name, column)

    def __len__(self) -> int:
        return len(self.job_id)

    @classmethod
    def from_jobs(cls, jobs: Sequence[Job]) -> JobColumns:
        """The columns of ``jobs``, in their order."""
        return cls(
            job_id=np.array([j.job_id for j in jobs], dtype=np.int64),
            submit_time=np.array([j.submit_time for j in jobs], dtype=np.float64),
            run_time=np.array([j.run_time for j in jobs], dtype=np.float64),
            requested_time=np.array([j.requested_time for j in jobs], dtype=np.float64),
            requested_procs=np.array([j.requested_procs for j in jobs], dtype=np.int64),
            home_site=np.array([j.home_site for j in jobs], dtype=np.int64),
            app_class=np.array([j.app_class for j in jobs], dtype=np.int64),
            transfer_s=np.array([j.attrs.get(TRANSFER_ATTR, 0.0) for j in jobs], dtype=np.float64),
        )

    def to_jobs(self) -> list[Job]:
        """``Job`` objects of the rows (``attrs["transfer_s"]`` set where it is not 0)."""
        rows = zip(
            self.job_id.tolist(),
            self.submit_time.tolist(),
            self.run_time.tolist(),
            self.requested_time.tolist(),
            self.requested_procs.tolist(),
            self.home_site.tolist(),
            self.app_class.tolist(),
            self.transfer_s.tolist(),
            strict=True,
        )
        return [
            Job(i, s, r, q, p, home_site=h, app_class=c, attrs={TRANSFER_ATTR: t} if t else {})
            for i, s, r, q, p, h, c, t in rows
        ]


@dataclass
class MultiSiteResult:
    """Where and when each job ran, plus the meta-scheduling costs. Arrays align with ``table`` (and ``jobs``).

    ``run_time`` is the time the final copy ran (scaled to its site, transfer included);
    ``best_run_time`` the job's shortest run time over all sites that could hold it (no
    transfer), the numerator of its efficacy; ``messages`` and ``attempts`` count the protocol's
    messages and the start attempts per job; ``busy_proc_s`` the processor-seconds each site spent
    on jobs, killed copies included; ``wasted_proc_s`` those of killed copies alone.
    ``log``, when requested, lists ``(time, event, job_id, site)`` with event one of ``submit``,
    ``start``, ``cancel``, ``deny``, ``kill``, ``end``, in the order they happened.
    """

    table: JobColumns
    sites: list[Site]
    start_time: np.ndarray
    end_time: np.ndarray
    site: np.ndarray
    procs: np.ndarray
    run_time: np.ndarray
    best_run_time: np.ndarray
    copies: np.ndarray
    messages: np.ndarray
    attempts: np.ndarray
    busy_proc_s: np.ndarray
    denials: int = 0
    kills: int = 0
    wasted_proc_s: float = 0.0
    plans: int = 0
    log: list[tuple[float, str, int, int]] | None = None
    meta: dict[str, object] = field(default_factory=dict)
    #: the ``Job`` objects the run was given (``None`` when it was given columns)
    source_jobs: list[Job] | None = field(default=None, repr=False)

    @cached_property
    def jobs(self) -> list[Job]:
        """The jobs, aligned with the arrays: those the run was given, else built from :attr:`table`."""
        return list(self.source_jobs) if self.source_jobs is not None else self.table.to_jobs()

    @property
    def total_procs(self) -> int:
        return sum(s.procs for s in self.sites)

    def schedule(self) -> Schedule:
        """The result as a :class:`~metasched.sim.schedule.Schedule` (for the single-site metrics)."""
        return Schedule(
            jobs=self.jobs,
            start_time=self.start_time,
            end_time=self.end_time,
            site=self.site,
            procs=self.procs,
            run_time=self.run_time,
            total_procs=self.total_procs,
            site_names=[s.name for s in self.sites],
        )


def site_copy(job: Job, site_index: int, site: Site, efficacy: float | None = None) -> Job:
    """``job`` as it would run at ``site``: times scaled by the site's speed for its class, plus
    the data transfer when the site is not its home."""
    factor = site.time_factor(job.app_class)
    transfer = job.attrs.get(TRANSFER_ATTR, 0.0) if (job.home_site >= 0 and job.home_site != site_index) else 0.0
    copy = job.copy(run_time=job.run_time * factor + transfer, requested_time=job.requested_time * factor + transfer)
    if efficacy is not None:
        copy.attrs[EFFICACY_ATTR] = efficacy
    return copy


def _needs(job: Job) -> Mapping[str, int]:
    """The licence copies ``job`` needs (those it needs at least one of)."""
    needs = job.attrs.get(LICENCES_ATTR)
    return {n: c for n, c in needs.items() if c > 0} if needs else {}


class _Running:
    __slots__ = ("copy", "site", "start", "token")

    def __init__(self, copy: Job, site: int, start: float, token: int) -> None:
        self.copy = copy
        self.site = site
        self.start = start
        self.token = token


class _Site(SiteState):
    """A site as the multi-site driver holds it: the simulator's :class:`SiteState` (queue,
    running jobs, free processors, queue columns) plus its cached plan and the sums behind its
    instantaneous load."""

    __slots__ = ("fresh", "plan", "queued_work", "run_end_work", "run_procs", "start_ids")

    def __init__(self, site: Site, columns: QueueColumns | None) -> None:
        super().__init__(site.procs, site.name, columns)
        self.queued_work = 0.0
        self.run_end_work = 0.0
        self.run_procs = 0
        self.plan: Plan = Plan()
        self.start_ids: set[int] = set()
        self.fresh = False

    def view_with(self, extra: Job | None = None) -> SiteView:
        """The site's view, with ``extra`` queued last (its columns must hold it already)."""
        return SiteView(
            total_procs=self.procs,
            free_procs=self.free_procs,
            running=self.running_list(),
            queue=QueueView(self.queue, extra),
            name=self.name,
            columns=self.columns,
        )

    def load_s(self, now: float) -> float:
        return (self.queued_work + self.run_end_work - now * self.run_procs) / self.procs

    def fits_any(self) -> bool:
        return self.min_queued_width <= self.free_procs


def simulate_multisite(
    jobs: Sequence[Job] | JobColumns,
    sites: Sequence[Site],
    meta: MetaScheduler,
    local: LocalScheduler | Sequence[LocalScheduler],
    *,
    progress: ProgressFn | None = None,
    log: bool = False,
    check: bool = False,
    compiled: bool = True,
    kernel: bool | None = None,
    licences: Sequence[Mapping[str, int]] | None = None,
) -> MultiSiteResult:
    """Run ``jobs`` (times on the reference machine) over ``sites`` under ``meta`` and ``local``.

    ``local`` is one local scheduler for every site or one per site. Raises ``ValueError`` for
    duplicate ``job_id`` values, a job that no site can hold, or a job whose ``run_time``
    exceeds its ``requested_time``. ``compiled`` (the default) hands the local schedulers each
    site's queue as columns too (conservative backfilling then plans in compiled code); ``False``
    leaves them out (the pure-Python reference: same results, slower).

    ``kernel``: whether the whole event loop runs compiled (:mod:`metasched.sim._multisite_kernel`,
    an exact port of this driver for the meta-schedulers and local schedulers it knows; same
    results, log included). ``None`` (the default): when ``compiled`` and not ``check`` and the
    scheme is one it supports (:func:`kernel_scheme`), else this module's driver; ``False``: never;
    ``True``: always (``ValueError`` if the scheme is not supported). ``progress`` is then called
    once, at the end.

    ``jobs`` may be :class:`JobColumns`: the compiled event loop then runs on them without building
    ``Job`` objects (same results); this driver builds them (:meth:`JobColumns.to_jobs`).

    ``licences``: per site, the copies of each licence it holds; a job's ``attrs["licences"]`` then
    gates its copies (see the module docs). Runs on this module's driver without queue columns
    (``kernel=True`` is refused). ``None`` (the default): licences are not modelled.
    """
    locals_ = [local] * len(sites) if isinstance(local, LocalScheduler) else list(local)
    if licences is not None:
        if kernel:
            raise ValueError("the compiled event loop does not model licences")
        if isinstance(jobs, JobColumns):
            raise ValueError("licence needs are read from Job objects, not JobColumns")
        driver = _Driver(jobs, sites, meta, local, progress=progress, log=log, check=check, compiled=False)
        driver.use_licences(licences)
        return driver.run()
    use = kernel
    if use is None:
        use = compiled and not check and len(jobs) > 0 and kernel_scheme(meta, locals_) is not None
    if use:
        scheme = kernel_scheme(meta, locals_)
        if scheme is None:
            raise ValueError(f"the compiled event loop does not support {meta!r} with {locals_!r}")
        from metasched.sim._multisite_kernel import run_compiled

        if isinstance(jobs, JobColumns):
            _check_columns(jobs, sites, locals_)
            result = run_compiled(jobs, list(sites), scheme, log=log)
        else:
            _check_input(jobs, sites, locals_)
            result = run_compiled(list(jobs), list(sites), scheme, log=log)
        if progress is not None and len(jobs):
            progress(len(jobs))
        return result
    if isinstance(jobs, JobColumns):
        jobs = jobs.to_jobs()
    return _Driver(jobs, sites, meta, local, progress=progress, log=log, check=check, compiled=compiled).run()


def kernel_scheme(meta: MetaScheduler, local: Sequence[LocalScheduler]) -> tuple[int, int, int, int, int] | None:
    """``(k, selection, decision, local scheduler, queue order)`` codes of the compiled event loop
    for this scheme, or ``None`` when it does not support it. Supported: exactly the classes
    :class:`LeastLoad`, :class:`KReservations`, :class:`CompletionTime`, :class:`CancelSlowerOnly`
    (subclasses may change the decisions); every site with the same local scheduler, exactly
    :class:`ConservativeBackfill` or :class:`EasyBackfill`, ordered by exactly :class:`Fcfs` or
    :class:`Efficacy`; EASY only with load-based site choice (a projection under EASY falls
    back to a conservative pass in this driver, which the loop does not port)."""
    from metasched.policy.local.easy import EasyBackfill
    from metasched.policy.meta.cancel_slower_only import CancelSlowerOnly
    from metasched.policy.meta.completion_time import CompletionTime
    from metasched.policy.meta.k_reservations import KReservations
    from metasched.policy.meta.least_load import LeastLoad
    from metasched.policy.priority.efficacy import Efficacy
    from metasched.policy.priority.fcfs import Fcfs
    from metasched.sim import _multisite_codes as c

    decisions = {
        LeastLoad: c.DECIDE_START,
        KReservations: c.DECIDE_START,
        CompletionTime: c.DECIDE_COMPLETION,
        CancelSlowerOnly: c.DECIDE_SLOWER,
    }
    decision = decisions.get(type(meta))
    if decision == c.DECIDE_SLOWER and getattr(meta, "variant", "restart") == "no-kill":
        decision = c.DECIDE_SLOWER_NO_KILL
    if decision is None or not local:
        return None
    first = local[0]
    kinds = {ConservativeBackfill: c.LOCAL_CONSERVATIVE, EasyBackfill: c.LOCAL_EASY}
    orders = {Fcfs: c.ORDER_FCFS, Efficacy: c.ORDER_EFFICACY}
    kind = kinds.get(type(first))
    order = orders.get(type(first.order))
    if kind is None or order is None:
        return None
    if any(type(x) is not type(first) or type(x.order) is not type(first.order) for x in local):
        return None
    selection = c.SELECT_COMPLETION if meta.selection == "completion" else c.SELECT_LOAD
    if kind == c.LOCAL_EASY and selection == c.SELECT_COMPLETION:
        return None
    return (meta.k, selection, decision, kind, order)


def _check_input(jobs: Sequence[Job], sites: Sequence[Site], local: Sequence[LocalScheduler]) -> None:
    """The driver's input checks (``ValueError`` naming what is wrong)."""
    if not sites:
        raise ValueError("simulate_multisite needs at least one site")
    if len(local) != len(sites):
        raise ValueError(f"{len(local)} local schedulers for {len(sites)} sites")
    seen: set[int] = set()
    max_procs = max(s.procs for s in sites)
    for job in jobs:
        if job.job_id in seen:
            raise ValueError(f"job_id {job.job_id} appears twice; job_id values must be unique")
        seen.add(job.job_id)
        if job.requested_procs > max_procs:
            raise ValueError(
                f"job {job.job_id} needs {job.requested_procs} processors; the largest site has {max_procs}"
            )
        if job.requested_time <= 0 or job.run_time < 0:
            raise ValueError(
                f"job {job.job_id}: requested_time must be positive and run_time non-negative, "
                f"got {job.requested_time} and {job.run_time}"
            )
        if job.run_time > job.requested_time:
            raise ValueError(
                f"job {job.job_id}: run_time {job.run_time} exceeds requested_time {job.requested_time}; "
                "the multi-site driver needs jobs that end by their estimates"
            )


def _check_columns(table: JobColumns, sites: Sequence[Site], local: Sequence[LocalScheduler]) -> None:
    """:func:`_check_input` on columns: the same checks, the same messages (the first bad job)."""
    if not sites:
        raise ValueError("simulate_multisite needs at least one site")
    if len(local) != len(sites):
        raise ValueError(f"{len(local)} local schedulers for {len(sites)} sites")
    ids = table.job_id
    n = len(ids)
    _, first = np.unique(ids, return_index=True)
    repeated = np.ones(n, dtype=bool)
    repeated[first] = False
    max_procs = max(s.procs for s in sites)
    req, run = table.requested_time, table.run_time
    # the predicates of _check_input, so that both accept and refuse the same jobs
    bad = (table.requested_procs > max_procs) | (req <= 0) | (run < 0) | (run > req)
    dup = int(np.argmax(repeated)) if repeated.any() else n
    i = int(np.argmax(bad)) if bad.any() else n
    if dup < i:
        raise ValueError(f"job_id {int(ids[dup])} appears twice; job_id values must be unique")
    if i < n:
        job = Job(int(ids[i]), 0.0, float(run[i]), float(req[i]), int(table.requested_procs[i]))
        _check_input([job], sites, local)


class _Driver:
    def __init__(
        self,
        jobs: Sequence[Job],
        sites: Sequence[Site],
        meta: MetaScheduler,
        local: LocalScheduler | Sequence[LocalScheduler],
        *,
        progress: ProgressFn | None,
        log: bool,
        check: bool,
        compiled: bool = True,
    ) -> None:
        if not sites:
            raise ValueError("simulate_multisite needs at least one site")
        self.sites = list(sites)
        n_sites = len(self.sites)
        if isinstance(local, LocalScheduler):
            self.local = [local] * n_sites
        else:
            self.local = list(local)
            if len(self.local) != n_sites:
                raise ValueError(f"{len(self.local)} local schedulers for {n_sites} sites")
        self.meta = meta
        self.jobs = list(jobs)
        self.progress = progress
        self.check = check
        self.log: list[tuple[float, str, int, int]] | None = [] if log else None
        n = len(self.jobs)
        _check_input(self.jobs, self.sites, self.local)
        self.index_of: dict[int, int] = {job.job_id: i for i, job in enumerate(self.jobs)}
        self.state = [
            _Site(site, QueueColumns(self.local[s].order) if compiled else None) for s, site in enumerate(self.sites)
        ]
        self.start_time = np.full(n, np.nan)
        self.end_time = np.full(n, np.nan)
        self.site_of = np.full(n, -1, dtype=np.int64)
        self.run_time = np.full(n, np.nan)
        self.best_run_time = np.full(n, np.nan)
        self.n_copies = np.zeros(n, dtype=np.int64)
        self.messages = np.zeros(n, dtype=np.int64)
        self.attempts = np.zeros(n, dtype=np.int64)
        self.busy = np.zeros(n_sites)
        self.copies: dict[int, dict[int, Job]] = {}
        self.running: dict[int, _Running] = {}
        self.ends: list[tuple[float, int, int, int]] = []
        self.seq = 0
        self.dirty: set[int] = set()
        self.denials = 0
        self.kills = 0
        self.wasted = 0.0
        self.plans = 0
        self.now = 0.0
        self.finished_since = 0
        #: per site: the licence copies it holds and those free now (``None``: not modelled)
        self.lic_total: list[dict[str, int]] | None = None
        self.lic_free: list[dict[str, int]] = []
        #: per site: copies waiting for licences there, in arrival order
        self.waiting: list[dict[int, Job]] = []

    def use_licences(self, licences: Sequence[Mapping[str, int]]) -> None:
        """Model the sites' licences (before :meth:`run`): one ``{name: copies}`` per site."""
        if len(licences) != len(self.sites):
            raise ValueError(f"{len(licences)} licence tables for {len(self.sites)} sites")
        self.lic_total = [dict(held) for held in licences]
        self.lic_free = [dict(held) for held in licences]
        self.waiting = [{} for _ in self.sites]
        for job in self.jobs:
            needs = _needs(job)
            if needs and not any(
                self._holds(s, needs) and job.requested_procs <= site.procs for s, site in enumerate(self.sites)
            ):
                wanted = ", ".join(f"{c} x {n}" for n, c in needs.items())
                raise ValueError(
                    f"job {job.job_id} needs licences {wanted} and {job.requested_procs} processors: no site has both"
                )

    # -- licences --------------------------------------------------------------------------------

    def _holds(self, s: int, needs: Mapping[str, int]) -> bool:
        total = self.lic_total[s] if self.lic_total is not None else {}
        return all(total.get(n, 0) >= c for n, c in needs.items())

    def _enqueue(self, s: int, copy: Job) -> None:
        """Queue ``copy`` at site ``s``, or keep it waiting there until its licences are free."""
        needs = _needs(copy) if self.lic_total is not None else {}
        if needs:
            free = self.lic_free[s]
            if any(free.get(n, 0) < c for n, c in needs.items()):
                self.waiting[s][copy.job_id] = copy
                return
            for n, c in needs.items():
                free[n] -= c
        self.state[s].submit(copy)

    def _give_back(self, s: int, copy: Job) -> None:
        """``copy`` leaves site ``s`` (end, kill, cancellation, denial): its licences are free again,
        and the copies waiting there that now fit are queued (first-fit, in arrival order)."""
        needs = _needs(copy) if self.lic_total is not None else {}
        if not needs:
            return
        free = self.lic_free[s]
        for n, c in needs.items():
            free[n] += c
        waiting = self.waiting[s]
        for job_id, queued in list(waiting.items()):
            wants = _needs(queued)
            if all(free.get(n, 0) >= c for n, c in wants.items()):
                del waiting[job_id]
                for n, c in wants.items():
                    free[n] -= c
                self.state[s].submit(queued)
                self._touch(s)

    # -- bookkeeping -------------------------------------------------------------------------

    def _event(self, kind: str, job_id: int, site: int) -> None:
        if self.log is not None:
            self.log.append((self.now, kind, job_id, site))

    def _touch(self, s: int) -> None:
        st = self.state[s]
        st.fresh = False
        self.dirty.add(s)

    def _plan(self, s: int) -> Plan:
        st = self.state[s]
        if st.fresh and not self.check:
            return st.plan
        plan = self._local_plan(s, st.view_with())
        self.plans += 1
        if self.check:
            self._audit(s, plan)
            if st.fresh:
                self._compare(s, plan)
        st.plan = plan
        st.start_ids = {job.job_id for job in plan.starts}
        st.fresh = True
        return plan

    def _local_plan(self, s: int, view: SiteView) -> Plan:
        """The local scheduler's plan for ``view``; with ``check``, compared with the plan it
        makes without the columns (the pure-Python path)."""
        plan = self.local[s].plan(view, self.now)
        if self.check and view.columns is not None:
            reference = self.local[s].plan(replace(view, columns=None), self.now)
            if [j.job_id for j in plan.starts] != [j.job_id for j in reference.starts] or (
                dict(plan.reservations) != dict(reference.reservations)
            ):
                raise AssertionError(f"site {s} at {self.now}: the plan on columns differs from the plan on the queue")
        return plan

    def _compare(self, s: int, plan: Plan) -> None:
        st = self.state[s]
        cached_starts = {j for j in st.start_ids if j in st.queue}
        new_starts = {job.job_id for job in plan.starts}
        if cached_starts != new_starts or dict(st.plan.reservations) != dict(plan.reservations):
            raise AssertionError(f"site {s} at {self.now}: the cached plan differs from a fresh one")

    def _audit(self, s: int, plan: Plan) -> None:
        st = self.state[s]
        releases = [(r.expected_end, r.procs) for r in st.running.values()]
        profile = Profile.from_releases(st.procs, self.now, st.free_procs, releases)
        for job in plan.starts:
            if job.job_id not in st.queue:
                raise AssertionError(f"site {s}: plan starts job {job.job_id}, which is not queued there")
            profile.reserve(self.now, job.requested_time, job.requested_procs)
        for job_id, at in plan.reservations.items():
            if job_id not in st.queue:
                raise AssertionError(f"site {s}: reservation for job {job_id}, which is not queued there")
            job = st.queue[job_id]
            # EASY's one reservation and conservative's many are all jointly feasible.
            profile.reserve(at, job.requested_time, job.requested_procs)

    def _audit_stale(self, t: int) -> None:
        """The latest plan of a site that changed since (cancellations, ends, arrivals) must still
        be feasible for the copies it still holds: cancelling keeps the other reservations valid."""
        st = self.state[t]
        releases = [(r.expected_end, r.procs) for r in st.running.values()]
        profile = Profile.from_releases(st.procs, self.now, st.free_procs, releases)
        for job in st.plan.starts:
            if job.job_id in st.queue:
                profile.reserve(self.now, job.requested_time, job.requested_procs)
        for job_id, at in st.plan.reservations.items():
            held = st.queue.get(job_id)
            if held is not None:
                profile.reserve(max(at, self.now), held.requested_time, held.requested_procs)

    def _expected_start(self, t: int, job_id: int) -> float:
        """Site ``t``'s answer for ``job_id``: its latest plan's start for it (``now`` when that
        plan starts it). A site that has not planned since the copy arrived plans first."""
        st = self.state[t]
        if job_id not in st.start_ids and job_id not in st.plan.reservations:
            self._plan(t)
        elif self.check and not st.fresh:
            self._audit_stale(t)
        if job_id in st.start_ids:
            return self.now
        at = st.plan.reservations.get(job_id, math.inf)
        return at if at > self.now else self.now

    # -- submission ----------------------------------------------------------------------------

    def _submit(self, job: Job) -> None:
        i = self.index_of[job.job_id]
        now = self.now
        eligible = [s for s, site in enumerate(self.sites) if job.requested_procs <= site.procs]
        if self.lic_total is not None and _needs(job):
            eligible = [s for s in eligible if self._holds(s, _needs(job))]
        scaled = {s: site_copy(job, s, self.sites[s]) for s in eligible}
        fastest = min(c.requested_time for c in scaled.values())
        for c in scaled.values():
            # Efficacy among all eligible sites while projecting; relative to the chosen ones below.
            c.attrs[EFFICACY_ATTR] = fastest / c.requested_time
        self.best_run_time[i] = min(job.run_time * self.sites[s].time_factor(job.app_class) for s in eligible)
        want_completion = self.meta.needs_completion_times(len(eligible))
        views = []
        for s in eligible:
            copy = scaled[s]
            completion = self._projected_completion(s, copy) if want_completion else None
            st = self.state[s]
            views.append(
                MetaSiteView(
                    index=s,
                    name=st.name,
                    total_procs=st.procs,
                    load_s=st.load_s(now),
                    estimate=copy.requested_time,
                    expected_completion=completion,
                )
            )
        chosen = self.meta.select_sites(job, views, now)
        if not chosen or len(set(chosen)) != len(chosen) or any(s not in scaled for s in chosen):
            raise ValueError(f"{self.meta!r} chose sites {chosen} for job {job.job_id}; eligible: {eligible}")
        self.messages[i] += self.meta.selection_messages(len(eligible))
        best = min(scaled[s].requested_time for s in chosen)
        held: dict[int, Job] = {}
        for s in sorted(chosen):
            copy = scaled[s]
            copy.attrs[EFFICACY_ATTR] = best / copy.requested_time
            st = self.state[s]
            self._enqueue(s, copy)
            st.queued_work += copy.requested_procs * copy.requested_time
            held[s] = copy
            self._touch(s)
            self._event("submit", job.job_id, s)
        self.copies[job.job_id] = held
        self.n_copies[i] = len(held)

    def _projected_completion(self, s: int, copy: Job) -> float:
        """When site ``s`` would complete ``copy`` were it queued now: its local scheduler's plan
        with the copy added (a conservative projection when that plan keeps no reservation)."""
        st = self.state[s]
        if st.columns is not None:
            st.columns.append(copy)
        try:
            view = st.view_with(extra=copy)
            plan = self._local_plan(s, view)
            self.plans += 1
            starts_now = any(j.job_id == copy.job_id for j in plan.starts)
            start = self.now if starts_now else plan.reservations.get(copy.job_id)
            if start is None:
                projection = ConservativeBackfill(order=self.local[s].order).plan(view, self.now)
                self.plans += 1
                if any(j.job_id == copy.job_id for j in projection.starts):
                    start = self.now
                else:
                    start = projection.reservations[copy.job_id]
        finally:
            if st.columns is not None:
                st.columns.remove(copy.job_id)
        return start + copy.requested_time

    # -- starts, cancellations, kills ----------------------------------------------------------

    def _remove_copy(self, job_id: int, s: int, kind: str) -> None:
        st = self.state[s]
        waiting = self.waiting[s] if self.waiting else None
        was_waiting = waiting is not None and job_id in waiting
        copy = waiting.pop(job_id) if waiting is not None and was_waiting else st.cancel(job_id)
        st.queued_work -= copy.requested_procs * copy.requested_time
        if not st.queue and not waiting:
            st.queued_work = 0.0
        del self.copies[job_id][s]
        self._touch(s)
        self._event(kind, job_id, s)
        if not was_waiting:
            self._give_back(s, copy)

    def _start(self, job_id: int, s: int) -> None:
        st = self.state[s]
        now = self.now
        if job_id in self.running:
            raise AssertionError(f"job {job_id} is already running; a second copy cannot start at site {s}")
        copy = st.queue[job_id]
        procs = copy.requested_procs
        if procs > st.free_procs:
            raise AssertionError(f"site {s}: starting job {job_id} ({procs} procs) with only {st.free_procs} free")
        st.start(copy, now)
        del self.copies[job_id][s]
        st.queued_work -= procs * copy.requested_time
        if not st.queue:
            st.queued_work = 0.0
        st.run_end_work += procs * (now + copy.requested_time)
        st.run_procs += procs
        self.seq += 1
        self.running[job_id] = _Running(copy, s, now, self.seq)
        heapq.heappush(self.ends, (now + copy.run_time, self.seq, job_id, self.seq))
        i = self.index_of[job_id]
        self.start_time[i] = now
        self.site_of[i] = s
        self.run_time[i] = copy.run_time
        self._event("start", job_id, s)

    def _release(self, job_id: int, kind: str) -> _Running:
        r = self.running.pop(job_id)
        st = self.state[r.site]
        procs = r.copy.requested_procs
        st.finish(job_id)
        self._give_back(r.site, r.copy)
        st.run_procs -= procs
        st.run_end_work -= procs * (r.start + r.copy.requested_time)
        if not st.running:
            st.run_end_work = 0.0
        self.busy[r.site] += procs * (self.now - r.start)
        self._touch(r.site)
        self._event(kind, job_id, r.site)
        return r

    def _finish(self, job_id: int, token: int) -> None:
        r = self.running.get(job_id)
        if r is None or r.token != token:
            return  # the end of a killed copy
        self._release(job_id, "end")
        i = self.index_of[job_id]
        self.end_time[i] = self.now
        # Copies kept at faster sites (cancel-slower-only) are pointless once the job is done.
        for t in sorted(self.copies[job_id]):
            self._remove_copy(job_id, t, "cancel")
            self.messages[i] += 1
        del self.copies[job_id]
        self.finished_since += 1
        if self.progress is not None and self.finished_since >= 1000:
            self.progress(self.finished_since)
            self.finished_since = 0

    def _kill(self, job_id: int) -> None:
        r = self._release(job_id, "kill")
        self.kills += 1
        self.wasted += r.copy.requested_procs * (self.now - r.start)

    def _process(self, s: int) -> None:
        st = self.state[s]
        if not st.queue or not st.fits_any():
            return
        plan = self._plan(s)
        denied = False
        for job in plan.starts:
            job_id = job.job_id
            if job_id not in st.queue:
                continue
            held = self.copies[job_id]
            offers = [
                CopyOffer(site=t, estimate=held[t].requested_time, expected_start=self._expected_start(t, job_id))
                for t in sorted(held)
                if t != s
            ]
            r = self.running.get(job_id)
            if r is not None:
                offers.append(
                    CopyOffer(site=r.site, estimate=r.copy.requested_time, expected_start=r.start, is_running=True)
                )
            i = self.index_of[job_id]
            others = len(offers)
            self.attempts[i] += 1
            self.messages[i] += 2 * others
            copy = st.queue[job_id]
            decision = self.meta.decide_start(job, s, copy.requested_time, offers, self.now) if offers else _START_ALONE
            if decision.start:
                running_sites = {o.site for o in offers if o.is_running}
                queued_sites = {o.site for o in offers if not o.is_running}
                if set(decision.kill) != running_sites or not set(decision.cancel) <= queued_sites:
                    raise AssertionError(f"{self.meta!r}: invalid decision {decision} for job {job_id} at site {s}")
                self.messages[i] += others
                for _ in decision.kill:
                    self._kill(job_id)
                self._start(job_id, s)
                for t in decision.cancel:
                    self._remove_copy(job_id, t, "cancel")
            else:
                self._remove_copy(job_id, s, "deny")
                self.denials += 1
                denied = True
        if not denied:
            # Starting a plan's own starts leaves its other reservations valid (see module doc):
            # the site stays fresh and needs no further pass at this instant.
            self.dirty.discard(s)

    # -- main loop -----------------------------------------------------------------------------

    def run(self) -> MultiSiteResult:
        order = sorted(self.jobs, key=lambda j: (j.submit_time, j.job_id))
        n = len(order)
        nxt = 0
        ends = self.ends
        inf = math.inf
        while nxt < n or ends:
            t_submit = order[nxt].submit_time if nxt < n else inf
            t_end = ends[0][0] if ends else inf
            self.now = now = t_submit if t_submit < t_end else t_end
            while ends and ends[0][0] == now:
                _, _, job_id, token = heapq.heappop(ends)
                self._finish(job_id, token)
            while nxt < n and order[nxt].submit_time == now:
                self._submit(order[nxt])
                nxt += 1
            dirty = self.dirty
            while dirty:
                s = min(dirty)
                dirty.discard(s)
                self._process(s)
        if self.progress is not None and self.finished_since:
            self.progress(self.finished_since)
        if not np.all(np.isfinite(self.end_time)):
            missing = [self.jobs[i].job_id for i in np.flatnonzero(~np.isfinite(self.end_time))[:5]]
            raise AssertionError(f"jobs never ran: {missing}")
        return MultiSiteResult(
            table=JobColumns.from_jobs(self.jobs),
            source_jobs=self.jobs,
            sites=self.sites,
            start_time=self.start_time,
            end_time=self.end_time,
            site=self.site_of,
            procs=np.array([j.requested_procs for j in self.jobs], dtype=np.int64),
            run_time=self.run_time,
            best_run_time=self.best_run_time,
            copies=self.n_copies,
            messages=self.messages,
            attempts=self.attempts,
            busy_proc_s=self.busy,
            denials=self.denials,
            kills=self.kills,
            wasted_proc_s=self.wasted,
            plans=self.plans,
            log=self.log,
        )
