"""HyperQueue: its Python API's LocalCluster (server and one worker of 2 cores), each job a task running ``true``."""

from __future__ import annotations

import tempfile

from _common import args, lattice, measure
from hyperqueue import Job
from hyperqueue.cluster import LocalCluster, WorkerConfig


def main() -> None:
    a = args()
    with LocalCluster(server_dir=tempfile.mkdtemp(prefix="hq-bench-")) as cluster:  # type: ignore[arg-type]
        cluster.start_worker(WorkerConfig(cores=2))
        client = cluster.client()

        def submit(job: Job) -> None:
            client.wait_for_jobs([client.submit(job)])

        def noop(n: int) -> None:
            job = Job()
            for _ in range(n):
                job.program(["true"])
            submit(job)

        def lat() -> None:
            job = Job()
            tasks: dict[str, object] = {}
            for name, after in lattice():
                tasks[name] = job.program(["true"], deps=[tasks[d] for d in after])
            submit(job)

        def one() -> None:
            job = Job()
            job.program(["true"])
            submit(job)

        measure("HyperQueue (Python API LocalCluster, 1 worker of 2 cores)", a.jobs, a.reps, noop, lat, one)


if __name__ == "__main__":
    main()
