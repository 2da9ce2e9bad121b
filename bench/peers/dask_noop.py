"""Dask distributed: a LocalCluster of 2 single-threaded worker processes, each job ``subprocess.run(["true"])``."""

from __future__ import annotations

import subprocess

from _common import args, lattice, measure
from distributed import Client, LocalCluster, wait


def true(*_deps: object) -> int:
    return subprocess.run(["true"]).returncode


def main() -> None:
    a = args()
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        client = Client(cluster)

        def noop(n: int) -> None:
            wait(client.map(true, range(n), pure=False))

        def lat() -> None:
            futures: dict[str, object] = {}
            for name, after in lattice():
                futures[name] = client.submit(true, *[futures[d] for d in after], key=f"{name}-{id(futures)}")
            wait(list(futures.values()))

        def one() -> None:
            client.submit(true, pure=False).result()

        measure("Dask distributed (2 worker processes)", a.jobs, a.reps, noop, lat, one)
        client.close()


if __name__ == "__main__":
    main()
