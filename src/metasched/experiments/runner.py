"""One sweep runner for every experiment: independent runs over a :class:`concurrent.futures.Executor`.

A sweep is a *context* (the inputs every run reads: traces, tables; built once), a list of
*tasks* (small, picklable, hashable: one simulation each) and a *work* function
``work(context, task) -> row`` defined at module level (so that it pickles by reference).

Where the runs go:

* ``executor=None`` (the default): this machine's cores. The context is built here, the warm-up
  (compiling or loading the numba kernels, importing what the runs import) is done here, the
  context's pages are frozen out of the garbage collector's reach, and the worker processes are
  *forked*: they inherit the context and the warm kernels instead of receiving or rebuilding them
  (the tricks of the former per-paper runners). One worker runs the tasks in this process.
* any other executor (Dask's ``Client.get_executor()``, the metaqueue's
  :class:`metasched.runtime.sweep_executor.MetaqueueExecutor`, a plain ``ProcessPoolExecutor``):
  the context is pickled once into ``stage_dir`` (which the workers must see: a shared file
  system on a cluster) and each worker loads it on its first task and keeps it. One warm-up call
  runs first and is waited for (it compiles the kernels into their on-disk cache once, instead of
  every worker compiling them at the same time). An executor with a ``submit_merge(futures)``
  method (the metaqueue's) also gets a merge call after the runs: the sweep's rows are then read
  from the file it names (a pickled list of ``(ok, row or exception)`` in task order), not
  gathered here.

Invariant: the rows depend on the tasks and the context only, never on the executor, the number
of workers or the order of completion. Rows are returned in task order (tested: the same rows
through the local pool, Dask and the metaqueue).

Resuming: a :class:`Journal` appends every finished row to a JSON-lines file at once, with the
sweep's inputs; a later sweep with the same inputs skips the tasks whose rows are there.
"""

from __future__ import annotations

import gc
import hashlib
import json
import os
import pickle
import queue
import threading
from collections.abc import Callable, Hashable, Iterable, Sequence
from concurrent.futures import Executor
from pathlib import Path
from typing import Any, TypeVar

Row = dict[str, Any]
T = TypeVar("T", bound=Hashable)
Work = Callable[[Any, Any], Row]
WarmUp = Callable[[Any, Sequence[Any]], None]

#: The context of the sweep running in this process (set before the local pool forks, or loaded
#: by :func:`_remote_call` on a remote worker), keyed by its digest.
_CONTEXT: dict[str, Any] = {}
_LOCAL = "local"


def _init_local(context: Any) -> None:
    _CONTEXT.clear()
    _CONTEXT[_LOCAL] = context


def _local_call(work: Work, task: Any) -> Row:
    return work(_CONTEXT[_LOCAL], task)


def _load_staged(path: str, digest: str) -> Any:
    if digest not in _CONTEXT:
        with open(path, "rb") as fh:
            blob = fh.read()
        if hashlib.sha256(blob).hexdigest() != digest:
            raise RuntimeError(f"{path}: the staged sweep context changed (digest mismatch)")
        _CONTEXT.clear()  # one sweep's context at a time per worker
        _CONTEXT[digest] = pickle.loads(blob)
    return _CONTEXT[digest]


def _remote_call(work: Work, path: str, digest: str, task: Any) -> Row:
    """What a remote worker runs: load the staged context once (kept for the next tasks), run."""
    return work(_load_staged(path, digest), task)


def _remote_warm_up(warm_up: WarmUp, path: str, digest: str, tasks: Sequence[Any]) -> bool:
    warm_up(_load_staged(path, digest), tasks)
    return True


def stage_context(context: Any, stage_dir: Path) -> tuple[str, str]:
    """Pickle ``context`` into ``stage_dir`` (named by its digest); ``(path, digest)``."""
    blob = pickle.dumps(context, protocol=pickle.HIGHEST_PROTOCOL)
    digest = hashlib.sha256(blob).hexdigest()
    stage_dir.mkdir(parents=True, exist_ok=True)
    path = stage_dir / f"context-{digest[:16]}.pkl"
    if not path.exists():
        tmp = path.with_suffix(".tmp")
        tmp.write_bytes(blob)
        tmp.replace(path)
    return str(path.resolve()), digest


def run_sweep(
    context: Any,
    tasks: Sequence[T],
    work: Work,
    *,
    executor: Executor | None = None,
    workers: int = 2,
    warm_up: WarmUp | None = None,
    stage_dir: Path | None = None,
    done: dict[T, Row] | None = None,
    on_done: Callable[[T, Row], None] | None = None,
    meanwhile: Callable[[], None] | None = None,
    order: Callable[[T], Any] | None = None,
    progress: Callable[[int], None] | None = None,
) -> list[Row]:
    """Run ``work(context, task)`` for every task not in ``done``; every task's row, in ``tasks`` order.

    ``done``: rows of an earlier sweep by task (not run again; ``on_done`` is called for new rows
    only). ``order``: a sort key to submit the tasks by (e.g. the longest first); submission order
    never changes the rows. ``meanwhile`` is called once in this process while the runs go (first,
    with one local worker). ``stage_dir``: where the context is staged for a non-local executor.
    ``progress(k)``: k more tasks have their row (first the ones in ``done``, then one per finished task).
    """
    done = dict(done or {})
    todo = [t for t in tasks if t not in done]
    if order is not None:
        todo.sort(key=order)
    results: dict[T, Row] = dict(done)
    if progress is not None and len(todo) < len(tasks):
        progress(len(tasks) - len(todo))

    def finish(task: T, row: Row) -> None:
        results[task] = row
        if on_done is not None:
            on_done(task, row)
        if progress is not None:
            progress(1)

    if executor is None and workers <= 1:
        if meanwhile:
            meanwhile()
        for task in todo:
            finish(task, work(context, task))
    elif executor is None:
        _run_local(context, todo, work, workers=workers, warm_up=warm_up, finish=finish, meanwhile=meanwhile)
    else:
        if stage_dir is None:
            raise ValueError("a non-local executor needs stage_dir (a directory its workers can read)")
        _run_remote(
            context,
            todo,
            work,
            executor,
            warm_up=warm_up,
            stage_dir=stage_dir,
            finish=finish,
            settle=results.__setitem__,
            meanwhile=meanwhile,
        )
    return [results[t] for t in tasks]


def _run_local(
    context: Any,
    todo: list[T],
    work: Work,
    *,
    workers: int,
    warm_up: WarmUp | None,
    finish: Callable[[T, Row], None],
    meanwhile: Callable[[], None] | None,
) -> None:
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor

    from metasched.sim._memory import keep_freed_memory

    keep_freed_memory()  # before the workers fork: they inherit it
    ctx = mp.get_context("fork" if "fork" in mp.get_all_start_methods() else "spawn")
    forked = ctx.get_start_method() == "fork" and bool(todo)
    if forked:
        if warm_up is not None:
            warm_up(context, todo)
        # the workers' garbage collector need not walk the inputs they inherit (nor touch their
        # pages): they live through the sweep
        gc.collect()
        gc.freeze()
    try:
        with ProcessPoolExecutor(
            max_workers=min(workers, max(1, len(todo))), mp_context=ctx, initializer=_init_local, initargs=(context,)
        ) as pool:
            futures = [(task, pool.submit(_local_call, work, task)) for task in todo]
            _drain(futures, finish, meanwhile)
    finally:
        if forked:
            gc.unfreeze()


def _run_remote(
    context: Any,
    todo: list[T],
    work: Work,
    executor: Executor,
    *,
    warm_up: WarmUp | None,
    stage_dir: Path,
    finish: Callable[[T, Row], None],
    settle: Callable[[T, Row], None],
    meanwhile: Callable[[], None] | None,
) -> None:
    if not todo:
        return
    path, digest = stage_context(context, stage_dir)
    if warm_up is not None:
        executor.submit(_remote_warm_up, warm_up, path, digest, todo).result()
    futures = [(task, executor.submit(_remote_call, work, path, digest, task)) for task in todo]
    submit_merge = getattr(executor, "submit_merge", None)
    merge = submit_merge([f for _t, f in futures]) if submit_merge is not None else None
    _drain(futures, finish, meanwhile)
    if merge is not None:
        # the sweep's rows are the merge job's file (the runs' results in task order), so that a
        # sweep whose submitting command went away still ends with them in one place
        with open(merge.result(), "rb") as fh:
            merged: list[tuple[bool, Any]] = pickle.load(fh)
        if len(merged) != len(todo):
            raise RuntimeError(f"{merge.result()}: {len(merged)} merged rows for {len(todo)} runs")
        for task, (ok, value) in zip(todo, merged, strict=True):
            if not ok:
                raise value
            settle(task, value)


def _drain(
    futures: Sequence[tuple[T, Any]], finish: Callable[[T, Row], None], meanwhile: Callable[[], None] | None
) -> None:
    """Hand each row to ``finish`` as its run completes (in this thread). Works with any future
    that has ``add_done_callback`` and ``result`` (``concurrent.futures`` and ``distributed``)."""
    ready: queue.Queue[tuple[T, Any]] = queue.Queue()
    for task, future in futures:
        future.add_done_callback(lambda f, t=task: ready.put((t, f)))
    if meanwhile:
        meanwhile()
    try:
        for _ in range(len(futures)):
            task, future = ready.get()
            finish(task, future.result())
    except BaseException:
        for _task, future in futures:
            future.cancel()
        raise


# ------------------------------------------------------------------------------------- resuming


class JournalError(ValueError):
    """A journal that cannot be resumed from (damaged, or written for other inputs)."""


class Journal:
    """Finished rows, appended as JSON lines ``{"inputs": ..., "row": ...}`` the moment they finish.

    ``inputs`` is everything the rows depend on (traces, sizes, seed, ...): a journal written for
    other inputs is refused, never mixed in. A last line cut short by a kill is dropped.
    """

    def __init__(self, path: Path, inputs: dict[str, Any]) -> None:
        self.path = path
        self.inputs = json.loads(json.dumps(inputs, default=_plain))
        self._lock = threading.Lock()
        self._fh: Any = None

    def read(self) -> list[Row]:
        """The rows already in the journal (none if there is no file)."""
        if not self.path.is_file():
            return []
        rows: list[Row] = []
        lines = self.path.read_text().splitlines()
        for number, line in enumerate(lines, 1):
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                if number == len(lines):
                    self.path.write_text("".join(f"{kept}\n" for kept in lines[:-1]))
                    break
                raise JournalError(f"{self.path}:{number}: not a JSON line; delete the file to start over") from None
            if not isinstance(record, dict) or "row" not in record:
                raise JournalError(f"{self.path}:{number}: not a journal record; delete the file to start over")
            if record.get("inputs") != self.inputs:
                raise JournalError(
                    f"{self.path}:{number}: written for other inputs ({record.get('inputs')}); "
                    "use another --out or delete the file to start over"
                )
            rows.append(record["row"])
        return rows

    def open(self, *, resume: bool) -> Journal:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fh = self.path.open("a" if resume else "w")
        return self

    def append(self, row: Row) -> None:
        with self._lock:
            self._fh.write(json.dumps({"inputs": self.inputs, "row": row}, default=_plain) + "\n")
            self._fh.flush()

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _plain(value: Any) -> Any:
    """A NumPy scalar as the Python number it holds (for ``json.dumps``)."""
    if hasattr(value, "item"):
        return value.item()
    raise TypeError(f"not JSON-serialisable: {value!r}")


# ------------------------------------------------------------------------------------ executors


def make_executor(
    spec: str, *, workers: int, connect_timeout_s: float = 20.0
) -> tuple[Executor | None, Callable[[], None]]:
    """``local`` (``None``: the runner's own pool) or ``dask://HOST:PORT`` (an existing Dask
    scheduler: ``distributed`` must be installed, ``pip install 'metasched[dask]'``); the executor
    and how to let go of it. The metaqueue executor lives on the runtime side (the CLI builds it)."""
    if spec == "local":
        return None, lambda: None
    if spec.startswith("dask://"):
        address = "tcp://" + spec.removeprefix("dask://")
        try:
            from distributed import Client
        except ImportError:
            raise ValueError("--executor dask://...: install the Dask extra (pip install 'metasched[dask]')") from None
        try:
            client = Client(address, timeout=f"{connect_timeout_s}s")
        except OSError as err:
            raise ValueError(f"--executor {spec}: no Dask scheduler answers at {address} ({err})") from None
        return client.get_executor(pure=False), client.close
    raise ValueError(f"--executor {spec!r}: expected local, metaqueue or dask://HOST:PORT")


def os_cpus() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def rows_by(rows: Iterable[Row], key: Callable[[Row], Hashable]) -> dict[Hashable, Row]:
    return {key(r): r for r in rows}
