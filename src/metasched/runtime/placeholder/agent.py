"""The placeholder agent (``metasched placeholder``): pulls jobs from the metaqueue and runs them.

Loop: claim jobs that fit the free cpus and the remaining wall time, run each as a child process
(``bash -c COMMAND``, its own environment and working directory, stdout/stderr to files), heartbeat,
report, claim again; leave on EXIT, or when the wall time is nearly used (then the placeholder has
*expired*, it has not failed).

Never two runs of one job at once: a child is killed as soon as a heartbeat says the job is no
longer ours, and also when no heartbeat has succeeded for ``lease_s - margin`` seconds (the server
may already have handed the job to another placeholder: we fence ourselves before the lease ends).
Children die with the agent (``PR_SET_PDEATHSIG``) so a ``kill -9`` of the agent stops its jobs.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import queue
import signal
import socket
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from metasched.policy.claim import FreeResources
from metasched.runtime.metaqueue.protocol import Completion, Transport
from metasched.runtime.metaqueue.records import ClaimedJob

log = logging.getLogger("metasched.placeholder")

_PR_SET_PDEATHSIG = 1


try:
    _LIBC: ctypes.CDLL | None = ctypes.CDLL("libc.so.6", use_errno=True)
except OSError:  # not glibc Linux: children then outlive a kill -9 of the agent
    _LIBC = None


def _die_with_parent() -> None:  # runs in the child between fork and exec
    if _LIBC is not None:
        _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


@dataclass(slots=True)
class _Run:
    job: ClaimedJob
    proc: subprocess.Popen[bytes]
    start_at: float
    stdout_path: str
    stderr_path: str
    killed: bool = False


class Agent:
    """One placeholder. ``wall_time_s`` None = unbounded; ``margin_s`` is kept free before the wall time."""

    def __init__(
        self,
        transport: Transport,
        *,
        site: str,
        placeholder_id: str | None = None,
        cpus: int = 1,
        mem_mb: int = 0,
        wall_time_s: float | None = None,
        log_dir: str | Path | None = None,
        lease_s: float = 60.0,
        heartbeat_s: float | None = None,
        margin_s: float = 5.0,
        idle_exit_s: float | None = None,
        max_wait_s: float = 1.0,
        give_up_s: float = 300.0,
        linger: bool = False,
    ):
        self.t = transport
        self.site = site
        self.id = placeholder_id or f"{socket.gethostname()}-{os.getpid()}-{int(time.time() * 1000) % 10**8}"
        self.cpus = cpus
        self.mem_mb = mem_mb
        self.wall_time_s = wall_time_s
        self.log_dir = (
            Path(log_dir) if log_dir else Path(os.environ.get("METASCHED_HOME", "~/.metasched")).expanduser() / "logs"
        )
        self.lease_s = lease_s
        self.heartbeat_s = heartbeat_s if heartbeat_s is not None else max(0.2, lease_s / 4)
        self.margin_s = margin_s
        self.idle_exit_s = idle_exit_s
        self.max_wait_s = max_wait_s
        self.give_up_s = give_up_s
        #: keep polling when told EXIT (a standing local worker) instead of leaving
        self.linger = linger
        self.started_at = time.time()
        self.runs: dict[int, _Run] = {}
        self.finished: queue.Queue[int] = queue.Queue()
        self.pending: list[Completion] = []
        self.last_heartbeat_ok = time.time()
        self.jobs_run = 0

    def remaining_s(self, now: float) -> float | None:
        if self.wall_time_s is None:
            return None
        return self.started_at + self.wall_time_s - self.margin_s - now

    def free_cpus(self) -> int:
        return self.cpus - sum(r.job.cpus for r in self.runs.values())

    def _start(self, job: ClaimedJob) -> None:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        out = str(self.log_dir / f"{job.job_id}.{job.attempt}.out")
        err = str(self.log_dir / f"{job.job_id}.{job.attempt}.err")
        env = dict(os.environ)
        env.update(job.env)
        env.update(
            METASCHED_JOB_ID=str(job.job_id),
            METASCHED_JOB_NAME=job.name or "",
            METASCHED_ATTEMPT=str(job.attempt),
            METASCHED_PLACEHOLDER=self.id,
            METASCHED_SITE=self.site,
        )
        now = time.time()
        try:
            with open(out, "wb") as fo, open(err, "wb") as fe:
                proc = subprocess.Popen(
                    ["/bin/bash", "-c", job.command],
                    cwd=job.cwd or None,
                    env=env,
                    stdout=fo,
                    stderr=fe,
                    stdin=subprocess.DEVNULL,
                    start_new_session=True,
                    preexec_fn=_die_with_parent,
                )
        except OSError as exc:  # bad cwd, ...: the job fails, the placeholder goes on
            Path(err).write_text(f"metasched: cannot start job: {exc}\n")
            self.pending.append(Completion(job.job_id, job.attempt, 127, now, time.time(), out, err))
            return
        run = _Run(job, proc, now, out, err)
        self.runs[job.job_id] = run
        threading.Thread(target=self._reap, args=(run,), daemon=True).start()

    def _reap(self, run: _Run) -> None:
        run.proc.wait()
        self.finished.put(run.job.job_id)

    def _kill(self, run: _Run, why: str) -> None:
        if run.killed:
            return
        log.warning("placeholder %s kills job %s: %s", self.id, run.job.job_id, why)
        run.killed = True
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(run.proc.pid, signal.SIGKILL)

    def _collect(self, block_s: float) -> None:
        """Move finished children to the pending reports (waiting up to ``block_s`` for the first)."""
        try:
            jid = self.finished.get(timeout=block_s) if block_s > 0 else self.finished.get_nowait()
        except queue.Empty:
            return
        while True:
            run = self.runs.pop(jid, None)
            if run is not None and not run.killed:
                code = run.proc.returncode
                self.pending.append(
                    Completion(
                        jid,
                        run.job.attempt,
                        code if code >= 0 else 128 - code,
                        run.start_at,
                        time.time(),
                        run.stdout_path,
                        run.stderr_path,
                    )
                )
            try:
                jid = self.finished.get_nowait()
            except queue.Empty:
                return

    def _report(self) -> None:
        if not self.pending:
            return
        try:
            accepted = self.t.complete(self.id, self.pending)
        except ConnectionError as exc:
            log.warning("report failed, will retry: %s", exc)
            return
        for c, ok in zip(self.pending, accepted, strict=True):
            if ok:
                self.jobs_run += 1
            else:
                log.warning("job %s attempt %s: report refused (no longer ours)", c.job_id, c.attempt)
        self.pending = []

    def _heartbeat(self, now: float) -> None:
        try:
            held = self.t.heartbeat(self.id)
        except ConnectionError as exc:
            log.warning("heartbeat failed: %s", exc)
            return
        self.last_heartbeat_ok = now
        for jid, run in list(self.runs.items()):
            if held.get(jid) != run.job.attempt:
                self._kill(run, "lease lost or job cancelled")

    def _learn_lease(self, lease_s: float) -> None:
        # The metaqueue's lease may be shorter than we were told: heartbeat often enough for it.
        # (Assumes the placeholder's clock agrees with the server's to well within the lease.)
        if 0 < lease_s < self.lease_s - 0.5:
            self.lease_s = lease_s
            self.heartbeat_s = min(self.heartbeat_s, max(0.1, lease_s / 4))

    def run(self) -> str:
        """Serve until EXIT or wall time; returns ``"done"``, ``"expired"`` or ``"failed"`` (metaqueue unreachable)."""
        host = socket.gethostname()
        while True:
            try:
                self.t.hello(self.id, self.site, host)
                break
            except ConnectionError as exc:
                remaining = self.remaining_s(time.time())
                if time.time() - self.started_at > self.give_up_s or (remaining is not None and remaining <= 0):
                    log.error("metaqueue unreachable for %.0f s, leaving: %s", time.time() - self.started_at, exc)
                    return "failed"
                log.warning("hello failed, retrying: %s", exc)
                time.sleep(1.0)
        state = "done"
        wait_s = 0.01
        next_hb = time.time() + self.heartbeat_s
        idle_since: float | None = None
        told_exit = False
        while True:
            now = time.time()
            if self.runs and now - self.last_heartbeat_ok > self.lease_s - min(self.margin_s, self.lease_s / 3):
                for run in list(self.runs.values()):
                    self._kill(run, "no heartbeat acknowledged within the lease: fencing")
            if now >= next_hb:
                self._heartbeat(now)
                next_hb = now + self.heartbeat_s
            self._collect(0)
            self._report()
            remaining = self.remaining_s(now)
            out_of_time = remaining is not None and remaining <= 0
            if out_of_time:
                state = "expired"
            free = self.free_cpus()
            if not out_of_time and not told_exit and free > 0 and not self.pending:
                try:
                    res = self.t.claim(self.id, self.site, FreeResources(free, self.mem_mb, remaining), limit=free)
                except ConnectionError as exc:
                    log.warning("claim failed: %s", exc)
                    res = None
                if res is not None and res.action == "job":
                    for job in res.jobs:
                        self._learn_lease(job.lease_until - now)
                        self._start(job)
                    next_hb = min(next_hb, now + self.heartbeat_s)
                    wait_s = 0.01
                    idle_since = None
                    continue
                if res is not None and res.action == "exit" and not self.runs and not self.linger:
                    told_exit = True
                if res is not None and res.action == "wait" and not self.runs:
                    idle_since = idle_since or now
                    if self.idle_exit_s is not None and now - idle_since > self.idle_exit_s:
                        told_exit = True
            if (told_exit or out_of_time) and not self.runs and not self.pending:
                break
            # Sleep until a child ends (then claim again at once) or a backed-off retry is due.
            self._collect(min(wait_s, max(0.0, next_hb - time.time())))
            if not self.runs or self.free_cpus() > 0:
                wait_s = min(self.max_wait_s, wait_s * 2)
        with contextlib.suppress(ConnectionError, PermissionError):
            self.t.bye(self.id, state)
        return state
