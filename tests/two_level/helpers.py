"""Builders shared by the two-level tests."""

from __future__ import annotations

from collections.abc import Sequence

from metasched.model.grid import Cluster, Machine
from metasched.model.job import Job
from metasched.model.licence import Licence
from metasched.model.qos import QOS_KEY, JobQos, UserClass
from metasched.policy.meta.two_level_base import MS_PRIORITY_KEY, ClusterView, QueueColumns, RunningOnMachine


def job(
    job_id: int,
    *,
    submit: float = 0.0,
    estimate: float = 100.0,
    cpus: int = 1,
    deadline: float | None = None,
    licences: Sequence[int] = (),
    user: UserClass = UserClass.REGULAR,
    benchmark: float = 100.0,
    priority: int | None = None,
) -> Job:
    mask = 0
    for lic in licences:
        mask |= 1 << lic
    attrs: dict[str, object] = {
        QOS_KEY: JobQos(deadline=deadline, licence_mask=mask, user_class=user, benchmark=benchmark)
    }
    if priority is not None:
        attrs[MS_PRIORITY_KEY] = priority
    return Job(
        job_id=job_id,
        submit_time=submit,
        run_time=estimate,
        requested_time=estimate,
        requested_procs=cpus,
        attrs=attrs,
    )


def cluster(
    machines: Sequence[tuple[int, float]], copies: Sequence[int] = (), all_licences: bool = True, name: str = "C"
) -> Cluster:
    lics = frozenset(range(len(copies))) if all_licences else frozenset()
    return Cluster(
        name=name,
        machines=tuple(Machine(f"m{i}", c, b, lics) for i, (c, b) in enumerate(machines)),
        licences=tuple(Licence(f"l{i}", n) for i, n in enumerate(copies)),
    )


def view(
    cl: Cluster,
    queue: Sequence[Job],
    running: Sequence[tuple[Job, int, float]] = (),
    now: float = 0.0,
) -> ClusterView:
    """``running``: (job, machine, start_time); free CPUs and licences derived from it."""
    free = [m.cpus for m in cl.machines]
    lic_free = [lic.copies for lic in cl.licences]
    runs = []
    for j, m, start in running:
        q = j.attrs[QOS_KEY]
        free[m] -= j.requested_procs
        for lic in q.licences:
            lic_free[lic] -= 1
        end = start + j.requested_time * q.benchmark / cl.machines[m].benchmark
        runs.append(RunningOnMachine(j, m, j.requested_procs, q.licence_mask, start, end))
    return ClusterView(
        cluster=cl,
        free_cpus=free,
        licence_free=lic_free,
        running=runs,
        queue=QueueColumns.from_jobs(queue, len(cl.licences)),
    )
