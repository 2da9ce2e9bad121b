"""A :class:`concurrent.futures.Executor` whose calls run as jobs of the metaqueue.

Each ``submit(fn, *args)`` pickles the call into the executor's work directory and submits one
metaqueue job, ``python -m metasched.runtime.sweep_executor CALL RESULT``; a placeholder claims
it, runs it, and the pickled result (or exception) comes back through the file. The runs therefore
go wherever the placeholders are: with the embedded default (this class's own SQLite queue and
``placeholders`` local placeholder processes) that is this machine; with ``url`` naming a shared
metaqueue (PostgreSQL) and a work directory on a shared file system, they go to every site whose
placeholders pull from it.

This module knows nothing of the simulator: the callables arrive pickled (by reference to their
module), so ``runtime`` still never imports ``sim`` (``lint-imports``). The experiments' runner
submits its warm-up call first and waits for it, then one job per run, then (:meth:`submit_merge`)
a *merge job* that depends ``afterany`` on every run job and writes the sweep's merged result
file (:func:`merge_results`) from the runs' result files. The merge is a job of the queue, not the
submitting command's work: a sweep sent to a shared metaqueue completes, merged file included,
even if the command that sent it is gone. The command waits for the merge job and reads its file.

Invariant: a future is resolved exactly once, with the result the job wrote, or with an error
naming the job and its log when the job ended without one (failed, cancelled, placeholder gone).
"""

from __future__ import annotations

import itertools
import os
import pickle
import shlex
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, Future
from pathlib import Path
from typing import Any

#: The job states after which a job will not run again.
_ENDED = ("done", "failed", "cancelled")


class MetaqueueJobError(RuntimeError):
    """A sweep job ended without a result."""


class MetaqueueExecutor(Executor):
    """Run calls as metaqueue jobs (see the module docstring).

    ``workdir`` holds the calls, results, the embedded queue (``mq.db``) and the placeholders'
    logs; ``placeholders`` local placeholder processes are started when ``url`` is not given.
    ``poll_s``: how often job states are read. ``start_timeout_s``: how long the placeholders may
    take to say hello.
    """

    def __init__(
        self,
        workdir: Path,
        *,
        placeholders: int = 2,
        url: str | None = None,
        site: str = "local",
        poll_s: float = 0.2,
        start_timeout_s: float = 120.0,
    ) -> None:
        from metasched.runtime.metaqueue.store import Store

        self.workdir = workdir.resolve()
        (self.workdir / "calls").mkdir(parents=True, exist_ok=True)
        self.url = url or f"sqlite:///{self.workdir / 'mq.db'}"
        self.store = Store.open(self.url)
        self.site = site
        self.poll_s = poll_s
        self._batch = f"sweep{os.getpid()}-{int(time.time() * 1000)}"
        self._ids = itertools.count(1)
        self._pending: dict[int, tuple[Future[Any], Path, str]] = {}
        #: every submitted call's job id and result file, by its future (for :meth:`submit_merge`)
        self._jobs: dict[Future[Any], tuple[int, Path]] = {}
        self._lock = threading.Lock()
        self._closed = False
        self._procs: list[subprocess.Popen[bytes]] = []
        if url is None:
            self._start_placeholders(placeholders, start_timeout_s)
        self._watcher = threading.Thread(target=self._watch, name="metaqueue-sweep", daemon=True)
        self._watcher.start()

    def _start_placeholders(self, n: int, timeout_s: float) -> None:
        logs = self.workdir / "logs"
        logs.mkdir(exist_ok=True)
        for i in range(n):
            cmd = [sys.executable, "-m", "metasched", "placeholder", "--site", self.site, "--db", self.url]
            cmd += ["--id", f"{self._batch}-{i}", "--linger", "--max-wait", "0.2", "--prefetch", "0"]
            cmd += ["--log-dir", str(logs)]
            with (logs / f"placeholder-{i}.log").open("ab") as out:
                self._procs.append(subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True))
        deadline = time.monotonic() + timeout_s
        mine = {f"{self._batch}-{i}" for i in range(n)}
        while not mine <= {p["id"] for p in self.store.placeholders(active_only=True)}:
            dead = [p for p in self._procs if p.poll() is not None]
            if dead or time.monotonic() > deadline:
                self.shutdown()
                raise MetaqueueJobError(f"the sweep's placeholders did not start; see {logs}")
            time.sleep(0.1)

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        return self._submit(fn, args, kwargs)

    def submit_merge(self, futures: Sequence[Future[Any]]) -> Future[str]:
        """One job, after (``afterany``) the jobs of ``futures`` (calls of this executor), that
        writes their results, in ``futures`` order, into one merged file (:func:`merge_results`);
        its future's value is that file's path. ``afterany``: the merge runs whether a run
        succeeded or not, and the merged file says which did not."""
        jobs = [self._jobs[f] for f in futures]
        merged = self.workdir / f"{self._batch}-merged-{next(self._ids)}.pkl"
        return self._submit(
            merge_results, ([str(path) for _id, path in jobs], str(merged)), {}, after=[i for i, _p in jobs]
        )

    def _submit(
        self, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], *, after: Sequence[int] = ()
    ) -> Future[Any]:
        from metasched.runtime.metaqueue.records import JobSpec

        if self._closed:
            raise RuntimeError("cannot submit to a MetaqueueExecutor after shutdown")
        n = next(self._ids)
        call = self.workdir / "calls" / f"{n}.call.pkl"
        result = self.workdir / "calls" / f"{n}.result.pkl"
        call.write_bytes(pickle.dumps((fn, args, kwargs), protocol=pickle.HIGHEST_PROTOCOL))
        command = " ".join(
            shlex.quote(a) for a in (sys.executable, "-m", "metasched.runtime.sweep_executor", str(call), str(result))
        )
        name = f"{self._batch}-{n}"
        future: Future[Any] = Future()
        with self._lock:
            refs = [str(i) for i in after]
            spec = JobSpec(
                command, name=name, cwd=os.getcwd(), max_attempts=2, after=refs, after_kinds=dict.fromkeys(refs, "any")
            )
            (job_id,) = self.store.submit([spec])
            self._pending[job_id] = (future, result, name)
            self._jobs[future] = (job_id, result)
        return future

    def _watch(self) -> None:
        while True:
            with self._lock:
                if self._closed and not self._pending:
                    return
                ids = list(self._pending)
            if ids:
                for row in self.store.jobs(states=_ENDED, name_like=f"{self._batch}-*"):
                    if row["id"] in ids:
                        try:
                            self._settle(row)
                        except Exception as err:  # never leave a future unresolved
                            self._fail(row["id"], err)
            time.sleep(self.poll_s)

    def _fail(self, job_id: int, err: Exception) -> None:
        with self._lock:
            entry = self._pending.pop(job_id, None)
        if entry is not None and not entry[0].done():
            entry[0].set_exception(MetaqueueJobError(f"metaqueue job {entry[2]}: unreadable result ({err})"))

    def _settle(self, row: dict[str, Any]) -> None:
        with self._lock:
            future, result, name = self._pending[row["id"]]
        if future.cancelled() or not future.set_running_or_notify_cancel():
            with self._lock:
                self._pending.pop(row["id"], None)
            return
        with self._lock:
            self._pending.pop(row["id"], None)
        if row["state"] == "done" and result.is_file():
            ok, value = pickle.loads(result.read_bytes())
            if ok:
                future.set_result(value)
            else:
                future.set_exception(value)
        else:
            future.set_exception(
                MetaqueueJobError(f"metaqueue job {name} (id {row['id']}) ended {row['state']} without a result")
            )

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        with self._lock:
            self._closed = True
            if cancel_futures or not wait:
                for future, _r, _n in list(self._pending.values()):
                    future.cancel()
                if self._pending:
                    self.store.cancel([str(j) for j in self._pending])
                self._pending.clear()
        if wait and hasattr(self, "_watcher"):
            self._watcher.join()
        for p in self._procs:
            p.terminate()
        for p in self._procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout=10)
        self._procs.clear()
        self.store.close()


def merge_results(results: Sequence[str], merged: str) -> str:
    """What a merge job runs: the runs' result files, in order, as one pickled list of
    ``(True, value)`` or ``(False, exception)`` written atomically to ``merged``; its path.

    A run without a result file (its job failed, was cancelled or lost its placeholder) is
    ``(False, MetaqueueJobError)`` naming the file: the merge never waits for or invents a row."""
    out: list[tuple[bool, Any]] = []
    for path in results:
        try:
            out.append(pickle.loads(Path(path).read_bytes()))
        except FileNotFoundError:
            out.append((False, MetaqueueJobError(f"no result at {path}: its run job ended without one")))
    target = Path(merged)
    tmp = target.with_suffix(".tmp")
    tmp.write_bytes(pickle.dumps(out, protocol=pickle.HIGHEST_PROTOCOL))
    tmp.replace(target)
    return merged


def run_call(call: Path, result: Path) -> int:
    """What a sweep job runs: the pickled call; ``(True, value)`` or ``(False, exception)`` written
    atomically to ``result``. Exit status 0 either way (the exception is the caller's to raise)."""
    fn, args, kwargs = pickle.loads(call.read_bytes())
    try:
        out: tuple[bool, Any] = (True, fn(*args, **kwargs))
    except Exception as err:  # handed back to the caller's future, traceback as text
        import traceback

        out = (False, MetaqueueJobError(f"{type(err).__name__}: {err}\n{traceback.format_exc()}"))
    tmp = result.with_suffix(".tmp")
    tmp.write_bytes(pickle.dumps(out, protocol=pickle.HIGHEST_PROTOCOL))
    tmp.replace(result)
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print("usage: python -m metasched.runtime.sweep_executor CALL RESULT", file=sys.stderr)
        sys.exit(2)
    # through the module's own name, so that what is pickled names ``metasched.runtime.sweep_executor``
    from metasched.runtime import sweep_executor

    sys.exit(sweep_executor.run_call(Path(sys.argv[1]), Path(sys.argv[2])))
