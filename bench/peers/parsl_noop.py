"""Parsl: HighThroughputExecutor with 2 workers on this machine, each job a ``bash_app`` running ``true``."""

from __future__ import annotations

import tempfile

import parsl
from _common import args, lattice, measure
from parsl.app.app import bash_app
from parsl.config import Config
from parsl.executors import HighThroughputExecutor
from parsl.providers import LocalProvider


@bash_app
def true(*_deps: object, inputs: tuple[object, ...] = ()) -> str:
    return "true"


def main() -> None:
    a = args()
    run_dir = tempfile.mkdtemp(prefix="parsl-bench-")
    config = Config(
        executors=[HighThroughputExecutor(max_workers_per_node=2, provider=LocalProvider(init_blocks=1, max_blocks=1))],
        run_dir=run_dir,
    )
    with parsl.load(config):

        def noop(n: int) -> None:
            for f in [true() for _ in range(n)]:
                f.result()

        def lat() -> None:
            futures: dict[str, object] = {}
            for name, after in lattice():
                futures[name] = true(inputs=[futures[d] for d in after])
            for f in futures.values():
                f.result()  # type: ignore[attr-defined]

        def one() -> None:
            true().result()

        measure("Parsl HTEX bash_app (2 workers)", a.jobs, a.reps, noop, lat, one)


if __name__ == "__main__":
    main()
