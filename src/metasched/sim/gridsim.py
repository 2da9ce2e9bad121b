"""Any meta-policy of :data:`~metasched.policy.meta.registry.POLICIES` on any platform: the user's grid driver.

:func:`simulate_platform` takes a workload (times on the reference machine), a
:class:`~metasched.model.platform.Platform` and a policy (a :class:`PolicySpec` or its text
``NAME[:key=value,...]``), runs the driver of the policy's family and returns a
:class:`GridSimResult` with the same per-job columns whatever the family:

* ``reservations`` (seed 000): :func:`metasched.sim.multisite.simulate_multisite` over the sites
  (speed factors per job kind, each site's local scheduler and queue order, or the policy's
  ``local``/``order`` for every site). The compiled event loop runs it when it can, exactly as in
  the paper's experiment (the same call, so the same rows).
* ``selector`` (seed 001): :func:`metasched.sim.grid.simulate_grid`, one machine per site, one
  central queue under EASY; co-allocated jobs run ``(1 + overhead) x`` longer. This model has no
  speed factors: every site must have speed 1.

Licences: a job's ``attrs["licences"]`` (``{name: copies}``) is honoured by the ``two-level`` driver
(a job waits until its copies are free at its cluster) and the ``reservations`` driver (a copy
enters its site's queue once it holds its licences there; :mod:`metasched.sim.multisite`, Python
driver); the ``selector`` family refuses a workload that needs any, with a :class:`PolicyError`
naming ``licences.NAME``, rather than overrun a site's licences.

Invariants (``tests/sim/test_gridsim.py``, hypothesis): every job runs once, at one site (or as
synchronised parts), never before it is submitted; its duration is its run time x the site's
factor (+ the transfer or split overhead); no site ever holds more processors than it has, nor
more copies of a licence (every policy: honoured or refused).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from metasched.model.job import Job
from metasched.model.platform import Platform
from metasched.policy.base import LocalScheduler
from metasched.policy.local import REGISTRY as LOCAL_REGISTRY
from metasched.policy.meta.base import Allocation, MachineSelector
from metasched.policy.meta.registry import PolicyError, PolicySpec, parse_policy
from metasched.policy.meta.reservations_base import MetaScheduler
from metasched.policy.priority import REGISTRY as ORDER_REGISTRY
from metasched.sim.metrics import BSLD_THRESHOLD_S

ProgressFn = Callable[[int], None]


@dataclass
class GridSimResult:
    """Per-job columns of a run (aligned, in the workload's order) plus the policy and platform.

    ``site`` is the index of the site that ran the job (for a co-allocated job: its largest
    part's); ``parts[i]`` lists ``(site, processors)`` of job ``i``; ``run_time`` is the time it
    ran there (scaled, overheads included); ``best_run_time`` its shortest run time at any site
    (no overhead; the numerator of effective utilization); ``messages`` the meta-scheduler's
    control messages for it. ``busy_proc_s[s]`` is what site ``s`` spent, killed copies included.
    """

    policy: str
    platform: Platform
    job_id: np.ndarray
    submit_time: np.ndarray
    start_time: np.ndarray
    end_time: np.ndarray
    procs: np.ndarray
    site: np.ndarray
    run_time: np.ndarray
    best_run_time: np.ndarray
    messages: np.ndarray
    busy_proc_s: np.ndarray
    parts: list[Allocation]
    meta: dict[str, Any] = field(default_factory=dict)
    #: the family driver's own result (``MultiSiteResult`` / ``GridResult``), for its own metrics
    raw: Any = field(default=None, repr=False)

    def __len__(self) -> int:
        return len(self.job_id)

    @property
    def wait(self) -> np.ndarray:
        return self.start_time - self.submit_time

    @property
    def response(self) -> np.ndarray:
        return self.end_time - self.submit_time

    @property
    def bounded_slowdown(self) -> np.ndarray:
        return np.maximum(self.response / np.maximum(self.run_time, BSLD_THRESHOLD_S), 1.0)

    def columns(self) -> dict[str, np.ndarray]:
        """The per-job columns of ``jobs.csv``, in order."""
        names = np.array(self.platform.names, dtype=object)
        return {
            "job_id": self.job_id,
            "submit_time": self.submit_time,
            "start_time": self.start_time,
            "end_time": self.end_time,
            "procs": self.procs,
            "site": names[self.site] if len(self) else np.array([], dtype=object),
            "wait": self.wait,
            "response": self.response,
            "bounded_slowdown": self.bounded_slowdown,
            "run_time": self.run_time,
            "messages": self.messages,
        }

    def to_pandas(self) -> Any:
        """The per-job columns as a pandas ``DataFrame`` (needs pandas)."""
        try:
            import pandas as pd
        except ImportError:  # pragma: no cover - depends on the environment
            raise ImportError("to_pandas needs pandas: pip install pandas") from None
        return pd.DataFrame(self.columns())

    @property
    def summary(self) -> dict[str, Any]:
        """Whole-grid and per-site metrics (see :func:`summarise_grid`)."""
        if "summary" not in self.meta:
            self.meta["summary"] = summarise_grid(self)
        out: dict[str, Any] = self.meta["summary"]
        return out


def _stats(r: GridSimResult, mask: np.ndarray, procs_total: int, busy: float, span: float) -> dict[str, Any]:
    n = int(mask.sum())
    out: dict[str, Any] = {"jobs": n, "procs": procs_total}
    if n == 0:
        out.update(utilization=busy / (span * procs_total) if span > 0 else 0.0, effective_utilization=0.0)
        return out
    p = r.procs[mask].astype(float)
    wait, resp, bsld = r.wait[mask], r.response[mask], r.bounded_slowdown[mask]
    out.update(
        awrt=float((p * resp).sum() / p.sum()),
        mean_wait=float(wait.mean()),
        p95_wait=float(np.percentile(wait, 95)),
        mean_response=float(resp.mean()),
        mean_bounded_slowdown=float(bsld.mean()),
        p95_bounded_slowdown=float(np.percentile(bsld, 95)),
        utilization=float(busy / (span * procs_total)) if span > 0 else 0.0,
        effective_utilization=float((p * r.best_run_time[mask]).sum() / (span * procs_total)) if span > 0 else 0.0,
        messages=int(r.messages[mask].sum()),
    )
    return out


def summarise_grid(r: GridSimResult) -> dict[str, Any]:
    """``{"grid": {...}, "sites": {name: {...}}, "policy": ..., ...}``.

    Metrics: AWRT (response weighted by processors, as :mod:`metasched.sim.metrics`), mean and
    95th-percentile wait and bounded slowdown (threshold 10 s), utilization (processor-seconds
    spent, killed copies included, over ``span x processors``), effective utilization (each job's
    processors x its best run time anywhere, over the same), messages. ``span`` is the first
    submit to the last end, the same for the grid and every site."""
    span = float(r.end_time.max() - r.submit_time.min()) if len(r) else 0.0
    plat = r.platform
    grid = _stats(r, np.ones(len(r), dtype=bool), plat.total_procs, float(r.busy_proc_s.sum()), span)
    sites = {s.name: _stats(r, r.site == i, s.procs, float(r.busy_proc_s[i]), span) for i, s in enumerate(plat.sites)}
    return {
        "policy": r.policy,
        "platform": plat.name,
        "span": span,
        "grid": grid,
        "sites": sites,
        **{k: v for k, v in r.meta.items() if k != "summary"},
    }


# ------------------------------------------------------------------------------------------ drivers


def _check_jobs(jobs: Sequence[Job], platform: Platform, spec: PolicySpec) -> None:
    """Unique ids; every licence a job needs held by some site, and honoured by the policy's driver.

    The two-level and reservations drivers count licence copies (a job needing one waits until a
    copy is free at its site); the selector family (seed 001's central queue) would run such a job
    beyond a site's licences, so it refuses it, naming the licence (``licences.NAME``)."""
    seen: set[int] = set()
    for j in jobs:
        if j.job_id in seen:
            raise ValueError(f"job {j.job_id}: job ids must be unique")
        seen.add(j.job_id)
        needs = j.attrs.get("licences") or {}
        wanted = {n: c for n, c in needs.items() if c > 0}
        if wanted and spec.family == "reservations":
            fits = [
                s
                for s in platform.sites
                if s.procs >= j.requested_procs and all(s.licences.get(n, 0) >= c for n, c in wanted.items())
            ]
            if not fits and all(any(s.licences.get(n, 0) > 0 for s in platform.sites) for n in wanted):
                lic = next(iter(wanted))
                raise PolicyError(
                    f"licences.{lic}",
                    f"job {j.job_id} needs {wanted} and {j.requested_procs} processors, which no site of "
                    f"{platform.name!r} has together",
                )
        for lic in needs:
            if not any(s.licences.get(lic, 0) > 0 for s in platform.sites):
                raise ValueError(f"job {j.job_id} needs licence {lic!r}, which no site of {platform.name!r} holds")
            if spec.family == "selector" and needs[lic] > 0:
                raise PolicyError(
                    f"licences.{lic}",
                    f"policy {spec.name!r} does not count licences (seed 001); job {j.job_id} needs {lic!r}",
                )


def _locals(platform: Platform, spec: PolicySpec) -> list[LocalScheduler]:
    out: list[LocalScheduler] = []
    for site in platform.sites:
        local = spec.get("local") or site.scheduler
        order = spec.get("order") or site.order
        if local not in LOCAL_REGISTRY:
            raise PolicyError(f"sites.{site.name}.scheduler", f"local scheduler {local!r} is not simulated here")
        if order not in ORDER_REGISTRY:
            raise PolicyError(f"sites.{site.name}.order", f"unknown queue order {order!r}; known: fcfs, efficacy")
        out.append(LOCAL_REGISTRY[local](order=ORDER_REGISTRY[order]()))
    return out


def _same_locals(locals_: list[LocalScheduler]) -> LocalScheduler | list[LocalScheduler]:
    """One shared scheduler when every site's is the same class with the same order (the
    compiled event loop then applies, as in the experiments), else one per site."""
    first = locals_[0]
    same = all(
        type(x) is type(first) and type(getattr(x, "order", None)) is type(getattr(first, "order", None))
        for x in locals_
    )
    return first if same else locals_


def _built(spec: PolicySpec, adapter: Any) -> Any:
    """The policy object of ``spec``, checked to answer the question of the driver about to run it."""
    policy = spec.build()
    if not isinstance(policy, adapter):
        raise PolicyError(spec.name, f"policy {spec.name!r} is not a {adapter.__name__} ({spec.family} driver)")
    return policy


def simulate_platform(
    jobs: Sequence[Job],
    platform: Platform,
    policy: PolicySpec | str,
    *,
    progress: ProgressFn | None = None,
) -> GridSimResult:
    """Run ``jobs`` over ``platform`` under ``policy``; see the module docs."""
    spec = parse_policy(policy) if isinstance(policy, str) else policy
    _check_jobs(jobs, platform, spec)
    if spec.family == "reservations":
        return _run_reservations(jobs, platform, spec, progress)
    if spec.family == "selector":
        return _run_selector(jobs, platform, spec, progress)
    return _run_two_level(jobs, platform, spec)


def _run_two_level(jobs: Sequence[Job], platform: Platform, spec: PolicySpec) -> GridSimResult:
    """Seed 004's two-level scheduler on the platform: each site a cluster of its machines (one of
    ``procs`` processors when it lists none) of benchmark ``1 / speed``, holding its licences on
    every machine; jobs estimated on a machine of benchmark 1 (the reference), with the licences of
    ``job.attrs["licences"]``, no deadline and the regular user class unless ``attrs["qos"]`` says."""
    from metasched.model.qos import QOS_KEY, JobQos, UserClass
    from metasched.sim.two_level import CASES, simulate_two_level

    per_kind = [s for s in platform.sites if s.speeds]
    if per_kind:
        raise PolicyError(
            f"sites.{per_kind[0].name}.speed",
            f"policy {spec.name!r} models one speed per machine (seed 004); site {per_kind[0].name!r} has one per kind",
        )
    names = platform.licence_names()
    clusters = platform.to_clusters()
    index = {n: i for i, n in enumerate(names)}
    prepared = []
    for j in jobs:
        if QOS_KEY in j.attrs:
            prepared.append(j.copy())
            continue
        mask = 0
        for lic in j.attrs.get("licences") or {}:
            mask |= 1 << index[lic]
        copy = j.copy()
        copy.attrs[QOS_KEY] = JobQos(j.attrs.get("deadline"), mask, UserClass.REGULAR, 1.0)
        prepared.append(copy)
    case = CASES[str(spec.get("case") or "ms")]
    try:
        res = simulate_two_level(prepared, clusters, case.make_dispatcher(), case.make_local())
    except ValueError as exc:
        raise PolicyError(spec.name, str(exc)) from None
    order = res.jobs
    procs = np.array([j.requested_procs for j in order], dtype=np.int64)
    run = res.end - res.start
    site = np.asarray(res.cluster, dtype=np.int64)
    best = max(m.benchmark for c in clusters for m in c.machines)
    busy = np.zeros(len(clusters))
    np.add.at(busy, site, procs * run)
    return GridSimResult(
        policy=spec.label,
        platform=platform,
        job_id=np.array([j.job_id for j in order], dtype=np.int64),
        submit_time=np.array([j.submit_time for j in order], dtype=float),
        start_time=np.asarray(res.start, dtype=float),
        end_time=np.asarray(res.end, dtype=float),
        procs=procs,
        site=site,
        run_time=run,
        best_run_time=np.array([j.run_time / best for j in order], dtype=float),
        messages=np.zeros(len(order), dtype=np.int64),
        busy_proc_s=busy,
        parts=[((int(c), int(p)),) for c, p in zip(site.tolist(), procs.tolist(), strict=True)],
        meta={"case": case.name},
        raw=res,
    )


def _run_reservations(
    jobs: Sequence[Job], platform: Platform, spec: PolicySpec, progress: ProgressFn | None
) -> GridSimResult:
    from metasched.sim.multisite import simulate_multisite

    sites = platform.to_sites()
    meta: MetaScheduler = _built(spec, MetaScheduler)
    local = _same_locals(_locals(platform, spec))
    # licences modelled only when a job needs one (the compiled loop, as in the experiments, otherwise)
    licensed = any(v > 0 for j in jobs for v in (j.attrs.get("licences") or {}).values())
    licences = [dict(s.licences) for s in platform.sites] if licensed else None
    try:
        res = simulate_multisite(list(jobs), sites, meta, local, progress=progress, licences=licences)
    except ValueError as exc:
        if licensed and "licences" in str(exc):
            raise PolicyError("licences", str(exc)) from None
        raise
    return GridSimResult(
        policy=spec.label,
        platform=platform,
        job_id=np.asarray(res.table.job_id),
        submit_time=np.asarray(res.table.submit_time, dtype=float),
        start_time=res.start_time,
        end_time=res.end_time,
        procs=np.asarray(res.procs, dtype=np.int64),
        site=np.asarray(res.site, dtype=np.int64),
        run_time=res.run_time,
        best_run_time=res.best_run_time,
        messages=np.asarray(res.messages, dtype=np.int64),
        busy_proc_s=np.asarray(res.busy_proc_s, dtype=float),
        parts=[((int(s), int(p)),) for s, p in zip(res.site.tolist(), res.procs.tolist(), strict=True)],
        meta={"denials": res.denials, "kills": res.kills, "wasted_proc_s": res.wasted_proc_s},
        raw=res,
    )


def _run_selector(
    jobs: Sequence[Job], platform: Platform, spec: PolicySpec, progress: ProgressFn | None
) -> GridSimResult:
    from metasched.sim.grid import simulate_grid

    slow = [s for s in platform.sites if s.speed != 1.0 or any(f != 1.0 for f in s.speeds.values())]
    if slow:
        raise PolicyError(
            f"sites.{slow[0].name}.speed",
            f"policy {spec.name!r} models machines of equal speed (seed 001); site {slow[0].name!r} has another speed",
        )
    overhead = float(spec.get("overhead") or 0.0)
    res = simulate_grid(
        list(jobs),
        [s.procs for s in platform.sites],
        _built(spec, MachineSelector),
        overhead=overhead,
        progress=progress,
    )
    sched = res.schedule
    run = np.asarray(sched.run_time, dtype=float)
    procs = np.asarray(sched.procs, dtype=np.int64)
    busy = np.zeros(len(platform.sites))
    for part, r in zip(res.parts, run.tolist(), strict=True):
        for m, p in part:
            busy[m] += p * r
    return GridSimResult(
        policy=spec.label,
        platform=platform,
        job_id=np.array([j.job_id for j in sched.jobs], dtype=np.int64),
        submit_time=np.asarray(sched.submit_time, dtype=float),
        start_time=np.asarray(sched.start_time, dtype=float),
        end_time=np.asarray(sched.end_time, dtype=float),
        procs=procs,
        site=np.asarray(sched.site, dtype=np.int64),
        run_time=run,
        best_run_time=np.array([j.run_time for j in sched.jobs], dtype=float),
        messages=np.zeros(len(run), dtype=np.int64),
        busy_proc_s=busy,
        parts=list(res.parts),
        meta={"split_jobs": res.n_split, "overhead": overhead},
        raw=res,
    )


# ------------------------------------------------------------------------------------- workloads

HOME_MODES: tuple[str, ...] = ("partition", "round-robin")
KIND_SOURCES: tuple[str, ...] = ("executable", "queue", "random", "none")


def assign_homes(jobs: Sequence[Job], platform: Platform, mode: str, *, inplace: bool = False) -> tuple[list[Job], str]:
    """Copies of ``jobs`` (``inplace``: the jobs themselves) with ``home_site`` set, and a line saying how.

    ``partition``: the SWF partition field, partition ``p >= 1`` going to site ``(p - 1) mod N``
    (an error names the first job without one); ``round-robin``: the ``i``-th job in submit order
    to site ``i mod N``."""
    n = len(platform.sites)
    order = sorted(range(len(jobs)), key=lambda i: (jobs[i].submit_time, jobs[i].job_id))
    homes = [0] * len(jobs)
    if mode == "partition":
        for i, j in enumerate(jobs):
            if j.partition < 1:
                raise ValueError(
                    f"--home partition: job {j.job_id} has no partition field ({j.partition}); use --home round-robin"
                )
            homes[i] = (j.partition - 1) % n
        top = max((j.partition for j in jobs), default=0)
        how = f"home sites from the partition field (partition p -> site (p-1) mod {n}; partitions 1..{top})"
    elif mode == "round-robin":
        for rank, i in enumerate(order):
            homes[i] = rank % n
        how = f"home sites round robin over the {n} sites in submit order"
    else:
        raise ValueError(f"--home must be one of {', '.join(HOME_MODES)}, got {mode!r}")
    if inplace:
        for j, h in zip(jobs, homes, strict=True):
            j.home_site = h
        return list(jobs), how
    return [j.copy(home_site=h) for j, h in zip(jobs, homes, strict=True)], how


def assign_kinds(
    jobs: Sequence[Job], platform: Platform, source: str, seed: int = 1, *, inplace: bool = False
) -> tuple[list[Job], str]:
    """Copies of ``jobs`` (``inplace``: the jobs themselves) with ``app_class`` set to a kind of
    ``platform`` (its index in :attr:`Platform.kinds`), and a line saying how.

    ``executable`` / ``queue``: the SWF field's value, as text, names the kind (a value naming no
    kind of the platform gives class -1: every site's default speed); ``random``: uniform over
    the platform's kinds from ``seed`` (NumPy ``default_rng(seed).integers``, as the seed-000
    experiment draws benchmarks); ``none``: class -1 everywhere."""
    kinds = list(platform.kinds)

    def with_classes(classes: Sequence[int]) -> list[Job]:
        if inplace:
            for j, c in zip(jobs, classes, strict=True):
                j.app_class = c
            return list(jobs)
        return [j.copy(app_class=c) for j, c in zip(jobs, classes, strict=True)]

    if source == "none" or (source == "random" and not kinds):
        why = "" if source == "none" else " (the platform names no kinds)"
        return with_classes([-1] * len(jobs)), f"no job kinds{why}: each site's default speed"
    if source == "random":
        import numpy as np

        drawn = np.random.default_rng(seed).integers(0, len(kinds), size=len(jobs)).tolist()
        return with_classes(drawn), f"job kinds drawn uniformly from {', '.join(kinds)} (seed {seed})"
    if source not in ("executable", "queue"):
        raise ValueError(f"--kinds must be one of {', '.join(KIND_SOURCES)}, got {source!r}")
    index = {k: c for c, k in enumerate(kinds)}
    classes = [index.get(str(getattr(j, source)), -1) for j in jobs]
    matched = sum(1 for c in classes if c >= 0)
    out = with_classes(classes)
    return out, f"job kinds from the {source} field ({matched} of {len(out)} jobs name a kind of the platform)"
