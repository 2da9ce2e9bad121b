"""``metasched experiment NAME``: the papers' experiments, one door.

Every experiment takes the common options defined here (``--out``, ``--trace`` (repeatable),
``--jobs``, ``--workers``, ``--executor``, ``--resume``, ``--replot``, where they apply to its
paper) and its paper's own parameters. Each paper's command lives in a module of this package and
registers itself on ``app`` and is imported only when its experiment runs (one line in
:data:`EXPERIMENTS`: name -> module, one-line help; a test fails when they disagree). The work
is done by :mod:`metasched.experiments`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import Executor
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from metasched.cli.main import LazyGroup
from metasched.experiments import shared_dir

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress

    from metasched.experiments.runner import Journal

EXPERIMENTS: dict[str, tuple[str | tuple[str, ...], str]] = {
    "ernemann2002": (
        "metasched.cli.experiment.ernemann2002",
        "Local processing vs job sharing vs multi-site co-allocation (Ernemann et al. 2002).",
    ),
    "smartnet1998": (
        "metasched.cli.experiment.smartnet1998",
        "SmartNet (seed 002): OLB and MET against SmartNet on the production and academic models, and noise.",
    ),
    "braun2001": (
        "metasched.cli.experiment.braun2001",
        "Braun et al. (2001): every mapper on the 12 512 x 16 instances (makespan, time, ratio to the LP bound).",
    ),
    "pasquali2010": (
        "metasched.cli.experiment.pasquali2010",
        "Pasquali et al. 2010: MS heuristics vs LS heuristics vs FCFS+EASY on a 4-cluster grid.",
    ),
    "sabin2003": (
        "metasched.cli.experiment.sabin2003",
        "Heterogeneous multi-site schemes of Sabin et al. 2003 over load factors, figures 1-14.",
    ),
}


class _ExperimentGroup(LazyGroup):
    lazy = EXPERIMENTS


app = typer.Typer(
    help="Reproduce and extend the papers' experiments (CSV + PNG + summary).",
    no_args_is_help=True,
    cls=_ExperimentGroup,
)
_ExperimentGroup.typer_app = app


@app.callback()
def _experiments() -> None:
    # A callback keeps ``app`` a group before any experiment module is loaded.
    pass


#: The shared traces by short name (``--trace CTC``); the name is the trace's label in results.
TRACE_FILES = {
    "CTC": "CTC-SP2-1996-3.1-cln.swf.gz",
    "SDSC": "SDSC-SP2-1998-4.2-cln.swf.gz",
    "SDSC-BLUE": "SDSC-BLUE-2000-4.2-cln.swf.gz",
    "KTH": "KTH-SP2-1996-2.1-cln.swf.gz",
    "HPC2N": "HPC2N-2002-2.2-cln.swf.gz",
}

OutOpt = Annotated[Path, typer.Option("--out", help="Output directory (CSV, PNG, summary.md).")]
WorkersOpt = Annotated[int, typer.Option("--workers", min=1, help="Worker processes of the local pool.")]
ExecutorOpt = Annotated[
    str,
    typer.Option(
        "--executor",
        help="Where the runs go: local (this machine's cores), dask://HOST:PORT (an existing Dask scheduler; "
        "pip install 'metasched[dask]') or metaqueue (each run a job of the embedded metaqueue, local placeholders).",
    ),
]
ResumeOpt = Annotated[
    bool, typer.Option("--resume", help="Reuse the runs already in OUT/runs.partial.jsonl (same inputs only).")
]
ReplotOpt = Annotated[bool, typer.Option("--replot", help="Do not simulate: redo figures and summary from OUT.")]

#: Where a sweep appends each finished run (one JSON object per line) as it goes.
PARTIAL = "runs.partial.jsonl"


def progress_bar(name: str, console: Console) -> Progress:
    """The sweep's progress line: its name, a bar, runs done of all, time elapsed."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(
        TextColumn(f"[bold]{name}[/]"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=console
    )


def open_journal(
    out: Path, inputs: dict[str, Any], *, resume: bool, console: Console, what: str
) -> tuple[Journal, list[Any]]:
    """The sweep's journal in ``out`` (for these inputs) and, with ``--resume``, the records it already holds
    (announced as ``what``: simulations, runs, ...); a journal of other inputs is a usage error of ``--resume``."""
    from metasched.experiments.runner import Journal, JournalError

    journal = Journal(out / PARTIAL, inputs)
    try:
        earlier = journal.read() if resume else []
    except JournalError as err:
        raise typer.BadParameter(str(err), param_hint="--resume") from None
    if earlier:
        console.print(f"resuming: {len(earlier)} {what} already in {journal.path}")
    return journal, earlier


def resolve_traces(specs: list[str]) -> list[tuple[str, Path]]:
    """``(label, path)`` per ``--trace``: a short name of :data:`TRACE_FILES` (label: that name) or
    an SWF path (label: its full file name without ``.swf``/``.gz``, made unique). A missing file
    is a clear error."""
    out: list[tuple[str, Path]] = []
    seen: set[str] = set()
    for spec in specs:
        if spec.upper() in TRACE_FILES:
            label, path = spec.upper(), shared_dir() / "data" / "traces" / TRACE_FILES[spec.upper()]
        else:
            path = Path(spec)
            label = path.name.removesuffix(".gz").removesuffix(".swf")
        if not path.is_file():
            raise typer.BadParameter(f"trace {spec!r}: no file at {path} (set METASCHED_SHARED or give a path)")
        base, n = label, 2
        while label in seen:
            label, n = f"{base}#{n}", n + 1
        seen.add(label)
        out.append((label, path))
    return out


@contextmanager
def executor_for(spec: str, *, workers: int, out: Path) -> Iterator[Executor | None]:
    """The executor ``--executor`` names, closed on the way out (``None``: the local pool).

    The metaqueue executor is the runtime side's (:mod:`metasched.runtime.sweep_executor`): it is
    wired here so that :mod:`metasched.experiments` never imports the runtime."""
    close: Callable[[], None]
    if spec == "metaqueue":
        from metasched.runtime.sweep_executor import MetaqueueExecutor

        mq = MetaqueueExecutor(out / "metaqueue", placeholders=workers)
        executor: Executor | None = mq
        close = mq.shutdown
    else:
        from metasched.experiments.runner import make_executor

        try:
            executor, close = make_executor(spec, workers=workers)
        except ValueError as err:
            raise typer.BadParameter(str(err), param_hint="--executor") from None
    try:
        yield executor
    finally:
        close()
