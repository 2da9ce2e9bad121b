"""The placeholder agent (``metasched placeholder``): pulls jobs from the metaqueue and runs them.

Loop: claim jobs that fit the free cpus and the remaining wall time, run each as a child process
(``bash -c COMMAND``, or the command's words when bash would only exec them; its own environment and
working directory, stdout/stderr to files; started with ``posix_spawn``, see :mod:`.spawn`), heartbeat,
report, claim again; leave on EXIT, or when the wall time is nearly used (then the placeholder has
*expired*, it has not failed).

Lingering (``linger_for_s``, the site's ``linger``): told EXIT (nothing queued or running anywhere), the agent
stays that long, idle but woken at once by new work (:meth:`Transport.wait_for_work`: SQLite's
``data_version``, PostgreSQL's ``NOTIFY``, the server's ``/v1/wait``), so that a job submitted after the
last one ended starts without a new placeholder's start-up; the time counts from the first EXIT of an idle
stretch, and a job or a WAIT answer ends the stretch. ``linger`` (a flag) stays for ever: a standing worker.

Never two runs of one job at once: a child is killed as soon as a heartbeat says the job is no
longer ours, and also when no heartbeat has succeeded for ``lease_s - margin`` seconds (the server
may already have handed the job to another placeholder: we fence ourselves before the lease ends).
That deadline is kept by a small fencing thread (:class:`_Fencer`), whatever the main loop is doing
(a call to an unanswering metaqueue, bounded itself by a third of the lease, cannot hold it), and the
jobs fenced are named in the next heartbeat that gets through, so that the metaqueue takes them back at
once (attempt counted) rather than renewing them. A heartbeat lists every job the agent holds
(``holding``): only those are renewed, and a job leased to us that we do not hold (a claim whose answer
was lost, a prefetched job dropped) goes back to the queue uncounted. Failed calls are retried with a
back-off (50 ms doubling to 1 s); heartbeats, every 0.25 s while they fail.
Children die with the agent (a watchdog process kills them when the agent dies, ``kill -9`` included;
``PR_SET_PDEATHSIG`` where there is no watchdog).

Prefetch (short jobs): while jobs run, the agent also claims the next few (*ahead*), so that when a
child ends the next one starts at once and the report (with the next claim) overlaps its run. How
many: enough to cover ``prefetch_s`` of work at the measured mean run time, at most ``prefetch``; none
for jobs longer than ``prefetch_s`` (a long job's successor is better left to an idle placeholder).
A prefetched job is leased to this placeholder and ``running`` in the metaqueue: nobody else gets
it; it is started only while its lease is surely ours (claimed or heartbeat-renewed less than
``lease_s - margin`` ago), dropped when a heartbeat says it is no longer ours, handed back (release,
attempt not counted) when it no longer fits the wall time or the placeholder leaves, and back in
the queue by lease expiry if the placeholder dies.

Reports overlap the runs: a report (completions, hand-backs and the next claim in one round trip) is
sent from a second thread while the main loop keeps reaping and starting prefetched jobs; one report is
in flight at a time, and every other call to the metaqueue waits for it first.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import math
import os
import queue
import secrets
import select
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from metasched.policy.claim import FreeResources
from metasched.runtime.metaqueue.protocol import MAX_REPORT, Completion, Transport
from metasched.runtime.metaqueue.records import ClaimedJob, ClaimResult
from metasched.runtime.metaqueue.secure import private_dir
from metasched.runtime.placeholder.launcher import DEFAULT_LAUNCHER, Launcher, hosts
from metasched.runtime.placeholder.spawn import Child, Spawner

log = logging.getLogger("metasched.placeholder")

_PR_SET_PDEATHSIG = 1


try:
    _LIBC: ctypes.CDLL | None = ctypes.CDLL("libc.so.6", use_errno=True)
except OSError:  # not glibc Linux: children then outlive a kill -9 of the agent
    _LIBC = None


def start_failure_reason(cwd: str, exc: OSError) -> str:
    """Why a job could not start. A missing working directory is named as such: ``posix_spawn``
    reports a failed chdir as the shell's ENOENT (it blamed ``/bin/bash``)."""
    if cwd and not os.path.isdir(cwd):
        return f"working directory does not exist (or is not a directory), {cwd}"
    return str(exc)


def _die_with_parent() -> None:  # runs in the child between fork and exec
    if _LIBC is not None:
        _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


_SETPRIV: list[str] | None = None


def _job_argv(command: str) -> tuple[list[str], bool]:
    """argv for a job and whether a ``preexec_fn`` is needed. util-linux ``setpriv --pdeathsig`` gives the
    same parent-death signal without a ``preexec_fn``, which would force a slow fork of this process
    instead of a vfork (twice as slow per job on a loaded machine). Used only without a :class:`_Watchdog`."""
    global _SETPRIV
    if _SETPRIV is None:
        path = shutil.which("setpriv")
        ok = False
        if path:
            with contextlib.suppress(OSError, subprocess.SubprocessError):
                ok = "pdeathsig" in subprocess.run([path, "--help"], capture_output=True, text=True, timeout=10).stdout
        _SETPRIV = [path, "--pdeathsig", "KILL"] if path and ok else []
    if _SETPRIV:
        return [*_SETPRIV, *shell_argv(command)], False
    return shell_argv(command), True


# GNU make's fast path (job.c, construct_command_argv_internal): a recipe line with none of these
# characters, whose first word is not a shell builtin or keyword, is run directly, without a shell.
# Same result, one exec (and one bash start-up, ~1 ms) fewer per job.
_SHELL_CHARS = frozenset("#;\\\"'<>|&*?[]{}()$`~!=\n\t%^")
# Bash builtins and keywords (GNU make's list, plus bash's own, plus those whose builtin may differ from
# the program of the same name: echo, printf, kill, pwd, test). ``true`` and ``false`` are not here: the
# programs are the builtins' exact twins, as make also assumes.
_SHELL_WORDS = frozenset(
    (
        ".",
        ":",
        "[",
        "[[",
        "]]",
        "{",
        "}",
        "alias",
        "bg",
        "bind",
        "break",
        "builtin",
        "caller",
        "case",
        "cd",
        "command",
        "compgen",
        "complete",
        "continue",
        "coproc",
        "declare",
        "dirs",
        "disown",
        "do",
        "done",
        "echo",
        "elif",
        "else",
        "enable",
        "esac",
        "eval",
        "exec",
        "exit",
        "export",
        "fc",
        "fg",
        "fi",
        "for",
        "function",
        "getopts",
        "hash",
        "help",
        "history",
        "if",
        "in",
        "jobs",
        "kill",
        "let",
        "local",
        "logout",
        "mapfile",
        "popd",
        "printf",
        "pushd",
        "pwd",
        "read",
        "readarray",
        "readonly",
        "return",
        "select",
        "set",
        "shift",
        "shopt",
        "source",
        "suspend",
        "test",
        "then",
        "time",
        "times",
        "trap",
        "type",
        "typeset",
        "ulimit",
        "umask",
        "unalias",
        "unset",
        "until",
        "wait",
        "while",
    )
)


def shell_argv(command: str, env: Mapping[str, str] | None = None) -> list[str]:
    """``bash -c COMMAND``, or the command's words when bash would only split and exec them.

    Invariant: the direct form is used only for a command with no quoting, expansion, redirection,
    globbing or control character and whose first word is a program on ``PATH`` (not a builtin,
    keyword or function), where bash itself would exec ``PATH``'s program with those words.
    """
    words = command.split()
    search = (env if env is not None else os.environ).get("PATH", "")
    if (
        words
        and not _SHELL_CHARS.intersection(command)
        and words[0] not in _SHELL_WORDS
        and "/" not in words[0]
        # A relative PATH entry would be looked up from the job's directory, not ours: leave it to bash.
        and all(d.startswith("/") for d in search.split(os.pathsep))
    ):
        path = _which(words[0], search)
        if path is not None:
            return [path, *words[1:]]
    return ["/bin/bash", "-c", command]


_WHICH: dict[tuple[str, str], str | None] = {}


def _which(program: str, search: str) -> str | None:
    key = (program, search)
    if key not in _WHICH:
        if len(_WHICH) > 10_000:
            _WHICH.clear()
        _WHICH[key] = shutil.which(program, path=search)
    return _WHICH[key]


#: The environment variable carrying an agent run's random tag into every job it starts (and their children).
RUN_TAG_VAR = "METASCHED_PLACEHOLDER_RUN"

_WATCHDOG_SCRIPT = """
import os, signal, sys, time
tag = b"\\0" + sys.argv[1].encode() + b"=" + sys.argv[2].encode() + b"\\0"
def ours(pid):
    try:
        with open("/proc/%d/environ" % pid, "rb") as f:
            return tag in b"\\0" + f.read()
    except OSError:
        return False
pidfds = hasattr(os, "pidfd_open") and hasattr(signal, "pidfd_send_signal")
live, buf = {}, b""
while True:
    chunk = os.read(0, 65536)
    if not chunk:
        break
    buf += chunk
    *lines, buf = buf.split(b"\\n")
    for line in lines:
        op, pid = line.split()
        pid = int(pid)
        if op == b"-":
            fd = live.pop(pid, None)
            if fd is not None:
                os.close(fd)
            continue
        if not pidfds:
            live[pid] = None
            continue
        try:
            fd = os.pidfd_open(pid)  # this very process from now on, whatever its pid becomes
        except OSError:
            continue  # ended and reaped already (then the agent said "-" too)
        if ours(pid):  # checked after the pidfd is held: the pid cannot be somebody else's by now
            live[pid] = fd
        else:  # ended (a zombie shows no environment) or not ours: its stragglers are found by the tag below
            os.close(fd)
    time.sleep(0.05)  # wake at most 20 times a second, however fast jobs start
for pid, fd in live.items():
    try:
        # Only while the group leader we listed is unreaped (alive or a zombie) is its pid surely still
        # the id of OUR process group; otherwise the tag scan below finds what is left of the group.
        if fd is not None:
            signal.pidfd_send_signal(fd, 0)
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass
# Then every process carrying this agent run's tag: a job the agent spawned but died before listing, and
# descendants that left their process group. The tag is random per agent run: never a name two runs share.
# Twice, for forks racing the first pass.
for _ in range(2):
    for d in os.listdir("/proc"):
        if d.isdigit() and int(d) != os.getpid() and ours(int(d)):
            try:
                os.kill(int(d), signal.SIGKILL)
            except OSError:
                pass
    time.sleep(0.05)
"""


class _Watchdog:
    """A small helper process that kills the agent's running jobs when the agent dies, and nothing else.

    It reads ``+ PID`` / ``- PID`` lines on a pipe; the pipe ends (EOF) when the agent exits for any
    reason, ``kill -9`` included, and it then kills every process group still listed. This replaces a
    parent-death signal per job (``setpriv --pdeathsig``: one more exec per job) and also reaches the
    jobs' own children.

    What it kills is what this agent run started, never a name: each job carries ``tag`` (a random
    string made per agent run, :data:`RUN_TAG_VAR` in its environment). A listed pid is held by a pidfd
    and kept only if that process carries the tag; its group is killed only while that very leader is
    unreaped (so its pid cannot have been reused). Then every process carrying the tag is killed: that
    closes the window in which the agent dies after spawning a job but before listing it, and reaches
    descendants that left the job's process group. Two placeholders with one id (``metasched demo`` run
    twice on one machine) have different tags and never touch each other's jobs.
    """

    def __init__(self, tag: str) -> None:
        self.tag = tag
        self.proc = subprocess.Popen(
            [sys.executable, "-S", "-c", _WATCHDOG_SCRIPT, RUN_TAG_VAR, tag],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        assert self.proc.stdin is not None
        self.fd = self.proc.stdin.fileno()

    def started(self, pid: int) -> None:
        """Say at once (one small write) that ``pid`` leads a job's process group."""
        self._say(f"+ {pid}\n")

    def ended(self, pid: int) -> None:
        """Say at once that ``pid``'s job ended. Called BEFORE the child is reaped: until then its pid
        cannot be reused, so the watchdog never holds a pid that may now lead somebody else's process
        group (pids wrap quickly: ``pid_max`` is 32,768 on many systems, a minute of short jobs)."""
        self._say(f"- {pid}\n")

    def _say(self, msg: str) -> None:
        with contextlib.suppress(OSError):
            os.write(self.fd, msg.encode())  # one write < PIPE_BUF: atomic, safe from any thread

    def close(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            if self.proc.stdin is not None:
                self.proc.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)


def _private_out(path: str) -> BinaryIO:
    """``path`` opened for writing, truncated, created 0600 (a job's output is its owner's only)."""
    return os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600), "wb")


@dataclass(slots=True)
class _Ahead:
    """A prefetched job: leased to us, not started. ``safe_until``: local instant its lease is surely ours."""

    job: ClaimedJob
    safe_until: float


@dataclass(slots=True)
class _Run:
    job: ClaimedJob
    proc: subprocess.Popen[bytes] | Child
    start_at: float
    stdout_path: str
    stderr_path: str
    killed: bool = False


@dataclass(slots=True)
class _Report:
    """A report sent and not yet answered: what it carried, to count or send again."""

    future: Future[tuple[list[bool], ClaimResult | None]]
    results: list[Completion]
    release: list[tuple[int, int]]
    sent_at: float
    free: FreeResources | None
    ahead: int


class _Fencer:
    """Kills the agent's jobs when its lease may be over, on time, from a thread of its own.

    Invariant: no job of the agent runs past ``last_heartbeat_ok + lease_s - fence`` by more than one
    tick (``tick_s``), where ``last_heartbeat_ok`` is when the last acknowledged heartbeat was *sent*, and
    the metaqueue's lease, renewed by that heartbeat when it *arrived*, ends ``fence`` seconds later at
    the earliest: so the metaqueue never hands out a job that may still run here.
    """

    def __init__(self, agent: Agent, tick_s: float = 0.05) -> None:
        self.agent = agent
        self.tick_s = tick_s
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._loop, name=f"fence-{agent.id}", daemon=True)
        self.thread.start()

    def _loop(self) -> None:
        while not self.stop.wait(self.tick_s):
            self.agent._fence(time.time())

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=5)


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
        nodes: int = 1,
        launcher: str | None = None,
        lease_s: float = 60.0,
        heartbeat_s: float | None = None,
        margin_s: float = 5.0,
        idle_exit_s: float | None = None,
        max_wait_s: float = 1.0,
        give_up_s: float = 300.0,
        linger: bool = False,
        linger_for_s: float = 0.0,
        prefetch: int = 32,
        prefetch_s: float = 0.05,
    ):
        self.t = transport
        self.site = site
        self.id = placeholder_id or f"{socket.gethostname()}-{os.getpid()}-{int(time.time() * 1000) % 10**8}"
        #: ``cpus`` per node over ``nodes`` nodes; ``self.cpus`` is the whole placeholder's.
        self.node_cpus = cpus
        self.nodes = nodes
        self.cpus = cpus * nodes
        self.launcher = Launcher(launcher or DEFAULT_LAUNCHER)
        self.mem_mb = mem_mb
        self.wall_time_s = wall_time_s
        self.log_dir = (
            Path(log_dir) if log_dir else Path(os.environ.get("METASCHED_HOME", "~/.metasched")).expanduser() / "logs"
        ).absolute()
        self._log_prefix = str(self.log_dir) + os.sep
        self._log_dir_made = False
        #: Starts jobs with posix_spawn (see :mod:`.spawn`) where glibc allows, else ``Popen``.
        self._spawner: Spawner | None = None
        self.lease_s = lease_s
        self.heartbeat_s = heartbeat_s if heartbeat_s is not None else max(0.2, lease_s / 4)
        self.margin_s = margin_s
        self.idle_exit_s = idle_exit_s
        self.max_wait_s = max_wait_s
        self.give_up_s = give_up_s
        #: told EXIT, stay this long (s) idle before leaving (0: leave at once; ``linger``: for ever, a standing
        #: local worker); see the module docstring
        self.linger_for_s = math.inf if linger else linger_for_s
        #: When the current idle stretch's first EXIT came (``None``: not lingering).
        self.lingering_since: float | None = None
        self.started_at = time.time()
        self.runs: dict[int, _Run] = {}
        self.finished: queue.Queue[int] = queue.Queue()
        #: Children are waited for on pidfds in the main loop (no thread per job) where Linux has them.
        self._poll = select.poll() if hasattr(os, "pidfd_open") and hasattr(select, "poll") else None
        self._pidfds: dict[int, int] = {}
        self._watchdog: _Watchdog | None = None
        #: Random per agent run, in every job's environment: what the watchdog kills carries it (never a name).
        self.run_tag = secrets.token_hex(16)
        self.pending: list[Completion] = []
        #: Completions of jobs killed by a signal we did not send, held back ``SIGNAL_GRACE_S`` (see _collect).
        self.held: list[tuple[float, Completion]] = []
        self.last_heartbeat_ok = time.time()
        self.last_contact = time.time()
        #: Taken to reap a child or to kill one, so that a pid is never signalled once reaped (pids are reused).
        self._lock = threading.Lock()
        #: ``(job_id, attempt)`` of runs killed by fencing, to name in the next heartbeat that gets through.
        self.fenced: list[tuple[int, int]] = []
        self._fencer: _Fencer | None = None
        #: After a failed report or claim: not before ``_retry_at``; the back-off doubles up to 1 s.
        self._retry_at = 0.0
        self._backoff = self.BACKOFF_S[0]
        #: When the reports / claims began failing without a success since (``None``: they work). After
        #: ``give_up_s`` of that (a server answering 5xx to every report, say) the agent leaves.
        self._failing_since: float | None = None
        self.jobs_run = 0
        self.prefetch = prefetch
        self.prefetch_s = prefetch_s
        #: Prefetched jobs in the order to start them, and jobs to hand back at the next report.
        self.ahead: deque[_Ahead] = deque()
        self.to_release: list[tuple[int, int]] = []
        #: Moving mean of this placeholder's job run times (s); ``None`` before the first.
        self.mean_run_s: float | None = None
        #: The report in flight (see _send_report), the thread sending it, and the eventfd it wakes the loop with.
        self._inflight: _Report | None = None
        self._reporter: ThreadPoolExecutor | None = None
        self._wake: int | None = None
        #: The last claim got fewer jobs than asked: ask for more ahead only with the next report, not alone
        #: (an idle queue would otherwise cost a round trip per job).
        self._thin = False
        self._hostfile: str | None = None

    def remaining_s(self, now: float) -> float | None:
        if self.wall_time_s is None:
            return None
        return self.started_at + self.wall_time_s - self.margin_s - now

    def free_cpus(self) -> int:
        return self.cpus - sum(r.job.total_cpus for r in self.runs.values())

    def free_nodes(self) -> int:
        """Nodes free for one job: a placeholder of several nodes is one job's allocation (see fits_shape)."""
        return 1 if self.nodes == 1 else (0 if self.runs else self.nodes)

    def free(self, cpus: int, remaining: float | None) -> FreeResources:
        """What this placeholder offers a claim: ``cpus`` free now, its shape and memory."""
        if self.nodes == 1:
            return FreeResources(cpus, self.mem_mb, remaining)
        return FreeResources(cpus, self.mem_mb, remaining, nodes=self.free_nodes(), node_cpus=self.node_cpus)

    def _start(self, job: ClaimedJob) -> None:
        if not self._log_dir_made:
            private_dir(self.log_dir)  # 0700: a job's output is its owner's
            self._log_dir_made = True
        out = f"{self._log_prefix}{job.job_id}.{job.attempt}.out"
        err = f"{self._log_prefix}{job.job_id}.{job.attempt}.err"
        ours = {
            "METASCHED_JOB_ID": str(job.job_id),
            "METASCHED_JOB_NAME": job.name or "",
            "METASCHED_ATTEMPT": str(job.attempt),
            "METASCHED_PLACEHOLDER": self.id,
            RUN_TAG_VAR: self.run_tag,
            "METASCHED_SITE": self.site,
        }
        now = time.time()
        proc: subprocess.Popen[bytes] | Child
        if self._spawner is not None and self._watchdog is not None:
            argv = shell_argv(job.command, job.env if "PATH" in job.env else None)
            if job.is_parallel:
                argv = self._launch(job) + argv
            extra = {**job.env, **ours} if job.env else ours
            try:
                try:
                    proc = self._spawner.spawn(argv, extra, job.cwd or None, out, err)
                except OSError:
                    if self.log_dir.is_dir():
                        raise
                    private_dir(self.log_dir)  # removed under us: once more
                    proc = self._spawner.spawn(argv, extra, job.cwd or None, out, err)
            except OSError as exc:
                self._cannot_start(job, exc, now, out, err)
                return
            self._started(job, proc, now, out, err)
            return
        env = dict(os.environ)
        env.update(job.env)
        env.update(ours)
        try:
            with _private_out(out) as fo, _private_out(err) as fe:
                if job.is_parallel:
                    argv = self._launch(job) + shell_argv(job.command, env)
                    needs_preexec = self._watchdog is None
                elif self._watchdog is not None:
                    argv, needs_preexec = shell_argv(job.command, env), False
                else:
                    argv, needs_preexec = _job_argv(job.command)
                proc = subprocess.Popen(
                    argv,
                    cwd=job.cwd or None,
                    env=env,
                    stdout=fo,
                    stderr=fe,
                    stdin=subprocess.DEVNULL,
                    start_new_session=True,
                    preexec_fn=_die_with_parent if needs_preexec else None,
                )
        except OSError as exc:
            self._cannot_start(job, exc, now, out, err)
            return
        self._started(job, proc, now, out, err)

    def _cannot_start(self, job: ClaimedJob, exc: OSError, now: float, out: str, err: str) -> None:
        """Bad cwd, missing program, ...: the job fails (exit 127, the reason in its stderr file); we go on."""
        self._log_dir_made = False  # (in case the log directory is what vanished)
        with contextlib.suppress(OSError):
            private_dir(self.log_dir)
            with _private_out(err) as fe:
                fe.write(f"metasched: cannot start job: {start_failure_reason(job.cwd, exc)}\n".encode())
        self.pending.append(Completion(job.job_id, job.attempt, 127, now, time.time(), out, err))

    def _started(self, job: ClaimedJob, proc: subprocess.Popen[bytes] | Child, now: float, out: str, err: str) -> None:
        run = _Run(job, proc, now, out, err)
        self.runs[job.job_id] = run
        if self._watchdog is not None:
            self._watchdog.started(proc.pid)
        if self._poll is not None:
            try:
                fd = os.pidfd_open(proc.pid)
            except OSError:  # an old kernel: fall back to a thread per job from now on
                self._poll = None
            else:
                self._pidfds[fd] = job.job_id
                self._poll.register(fd, select.POLLIN)
                return
        threading.Thread(target=self._reap, args=(run,), daemon=True).start()

    def _reap(self, run: _Run) -> None:
        with contextlib.suppress(ChildProcessError, OSError):  # wait for the end without reaping
            os.waitid(os.P_PID, run.proc.pid, os.WEXITED | os.WNOWAIT)
        if self._watchdog is not None:
            self._watchdog.ended(run.proc.pid)
        with self._lock:
            run.proc.wait()
        self.finished.put(run.job.job_id)

    def _kill(self, run: _Run, why: str, *, fencing: bool = False) -> None:
        """Kill a run's process group (once). With ``fencing``, a run that has already ended is left to be
        reported, and a run killed is remembered in :attr:`fenced`. Safe from any thread."""
        with self._lock:
            if run.killed or run.proc.returncode is not None:  # (reaped: its pid may be someone else's now)
                return
            if fencing:
                with contextlib.suppress(ChildProcessError, OSError):
                    if os.waitid(os.P_PID, run.proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
                        return  # it ended on its own: its completion is reported as usual
                self.fenced.append((run.job.job_id, run.job.attempt))
            log.warning("placeholder %s kills job %s: %s", self.id, run.job.job_id, why)
            run.killed = True
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(run.proc.pid, signal.SIGKILL)

    def _fence(self, now: float) -> None:
        """Kill every run when no heartbeat has been acknowledged for ``lease_s - fence``: see :class:`_Fencer`."""
        if now - self.last_heartbeat_ok > self.lease_s - self._fence_s():
            for run in list(self.runs.values()):
                self._kill(run, "no heartbeat acknowledged within the lease: fencing", fencing=True)

    #: How long the report of a job killed by SIGTERM / SIGHUP / SIGINT / SIGKILL that this agent did not send is
    #: held back. Cancelling a placeholder (scancel, qdel) signals its jobs too, and they may die a moment before
    #: the agent does: reported at once, a job lost to its placeholder's cancellation would count as FAILED
    #: (exit 143) and fail its dependents. Held, it is never reported when the agent dies in that time; its
    #: lease then expires and the job runs again. An agent still alive after the grace reports the failure.
    SIGNAL_GRACE_S = 2.0
    #: Back-off after a failed report or claim: from the first value, doubling up to the second.
    BACKOFF_S = (0.05, 1.0)
    CANCEL_SIGNALS = frozenset({signal.SIGTERM, signal.SIGHUP, signal.SIGINT, signal.SIGKILL})

    def _collect(self, block_s: float) -> None:
        """Move finished children to the pending reports (waiting up to ``block_s`` for the first)."""
        if self.held:
            now = time.time()
            self.pending.extend(c for at, c in self.held if at <= now)
            self.held = [(at, c) for at, c in self.held if at > now]
        if self._pidfds and self._poll is not None:
            ready = self._poll.poll(max(0.0, block_s) * 1000)
            ended = []
            for fd, _ in ready:
                if fd == self._wake:  # a report's answer came: the loop takes it
                    with contextlib.suppress(BlockingIOError):
                        os.eventfd_read(fd)
                    continue
                ended.append(self._pidfds.pop(fd))
                self._poll.unregister(fd)
                os.close(fd)
            for jid in ended:
                run = self.runs.get(jid)
                if run is not None:
                    if self._watchdog is not None:
                        self._watchdog.ended(run.proc.pid)  # before reaping: see _Watchdog.ended
                    with self._lock:
                        run.proc.wait()
                    self.finished.put(jid)
            block_s = 0.0
        try:
            jid = self.finished.get(timeout=block_s) if block_s > 0 else self.finished.get_nowait()
        except queue.Empty:
            return
        while True:
            run = self.runs.pop(jid, None)
            if run is not None and not run.killed:
                code = run.proc.wait()  # (reaped already: its exit code)
                end = time.time()
                done = Completion(
                    jid,
                    run.job.attempt,
                    code if code >= 0 else 128 - code,
                    run.start_at,
                    end,
                    run.stdout_path,
                    run.stderr_path,
                )
                if code < 0 and -code in self.CANCEL_SIGNALS:
                    log.info("job %s killed by signal %d: report held %.0f s", jid, -code, self.SIGNAL_GRACE_S)
                    self.held.append((end + self.SIGNAL_GRACE_S, done))
                else:
                    self.pending.append(done)
                took = end - run.start_at
                self.mean_run_s = took if self.mean_run_s is None else 0.8 * self.mean_run_s + 0.2 * took
            try:
                jid = self.finished.get_nowait()
            except queue.Empty:
                return

    def want_ahead(self) -> int:
        """How many jobs to hold prefetched: ``prefetch_s`` of work at the mean run time, at most ``prefetch``."""
        if self.prefetch <= 0 or self.mean_run_s is None or self.mean_run_s >= self.prefetch_s:
            return 0
        return min(self.prefetch, max(1, int(self.prefetch_s / max(self.mean_run_s, 1e-4))))

    def _report_due(self, now: float) -> bool:
        """Whether to report now. While enough prefetched work is at hand, finished short jobs are
        reported together (one transaction for several), but none waits longer than ``prefetch_s / 5``:
        its dependents are waiting for the report."""
        if not self.runs or len(self.ahead) <= self.want_ahead() // 2:
            return True
        return now - min(c.end_at for c in self.pending) >= self.prefetch_s / 5

    def _send_report(self, free: FreeResources | None, ahead: int, *, overlap: bool = True) -> None:
        """Send pending completions and hand-backs; with ``free``, claim the next work in the same round trip
        (nothing is sent if there is nothing to report). With ``overlap`` (and a second thread and an eventfd, i.e.
        Linux), it is sent from the reporter thread and this returns at once: the main loop goes on reaping
        and starting jobs while the metaqueue answers (a report held the loop 1.3-4.5 ms, several job
        runs of no-op jobs). Its answer is taken by :meth:`_finish_report`. One report at a time, and no
        other call to the transport meanwhile (:meth:`_drain` first): the transport is used by one thread
        at a time."""
        assert self._inflight is None
        if not self.pending and not self.to_release:
            return
        # At most MAX_REPORT of each per report (the server refuses more); the rest goes with the next one.
        results, release = self.pending[:MAX_REPORT], self.to_release[:MAX_REPORT]
        self.pending, self.to_release = self.pending[MAX_REPORT:], self.to_release[MAX_REPORT:]
        sent_at = time.time()
        whole = self._whole(free) if free else None

        def call() -> tuple[list[bool], ClaimResult | None]:
            return self.t.report(
                self.id, results, self.site, free, free.cpus if free else 1, ahead=ahead, whole=whole, release=release
            )

        future: Future[tuple[list[bool], ClaimResult | None]]
        if overlap and self._reporter is not None and self._wake is not None:
            future = self._reporter.submit(call)
            wake = self._wake
            future.add_done_callback(lambda _: os.eventfd_write(wake, 1))
        else:
            future = Future()
            try:
                future.set_result(call())
            except Exception as exc:  # re-raised by _finish_report, as a direct call would
                future.set_exception(exc)
        self._inflight = _Report(future, results, release, sent_at, free, ahead)

    def _finish_report(self) -> ClaimResult | None:
        """Take the answer of the report in flight, waiting for it if need be (``None``: no report, failed,
        or no claim in it). A failed report's completions and hand-backs go back to be sent again."""
        sent = self._inflight
        if sent is None:
            return None
        self._inflight = None
        try:
            accepted, claimed = sent.future.result()
        except ConnectionError as exc:
            log.warning("report failed, will retry in %.2f s: %s", self._backoff, exc)
            self.pending[:0] = sent.results
            self.to_release[:0] = sent.release
            self._failed()
            return None
        self._succeeded()
        for c, ok in zip(sent.results, accepted, strict=True):
            if ok:
                self.jobs_run += 1
            else:
                log.warning("job %s attempt %s: report refused (no longer ours)", c.job_id, c.attempt)
        self.last_contact = time.time()
        if sent.free is not None:
            self._thin = claimed is None or len(claimed.jobs) < sent.free.cpus + sent.ahead
        self._take(claimed, sent.sent_at)
        return claimed

    def _drain(self) -> ClaimResult | None:
        """Wait for the report in flight, if any, and take its answer (before any other use of the transport)."""
        return self._finish_report() if self._inflight is not None else None

    def _claim(self, free: FreeResources, ahead: int) -> ClaimResult | None:
        sent_at = time.time()
        try:
            res = self.t.claim(self.id, self.site, free, free.cpus, ahead=ahead, whole=self._whole(free))
        except ConnectionError as exc:
            log.warning("claim failed, will retry in %.2f s: %s", self._backoff, exc)
            self._failed()
            return None
        self._succeeded()
        self.last_contact = time.time()
        self._thin = len(res.jobs) < free.cpus + ahead
        self._take(res, sent_at)
        return res

    def _failed(self) -> None:
        now = time.time()
        self._retry_at = now + self._backoff
        self._backoff = min(self.BACKOFF_S[1], self._backoff * 2)
        if self._failing_since is None:
            self._failing_since = now

    def _succeeded(self) -> None:
        self._backoff = self.BACKOFF_S[0]
        self._failing_since = None

    def _whole(self, free: FreeResources) -> FreeResources:
        if self.nodes == 1:
            return FreeResources(self.cpus, self.mem_mb, free.remaining_s)
        return FreeResources(self.cpus, self.mem_mb, free.remaining_s, nodes=self.nodes, node_cpus=self.node_cpus)

    def _launch(self, job: ClaimedJob) -> list[str]:
        """The launcher's words to put before a parallel job's command."""
        return self.launcher.argv(job, self.hostfile() if self.launcher.needs_hostfile else "")

    def hostfile(self) -> str:
        """The placeholder's hosts as an OpenMPI host file (``HOST slots=N``), written once (:func:`hosts`)."""
        if self._hostfile is None:
            path = self.log_dir / f"{self.id}.hosts"
            private_dir(self.log_dir)
            lines = [f"{h} slots={n}" for h, n in hosts(os.environ, self.node_cpus, self.nodes)]
            path.write_text("\n".join(lines) + "\n")
            self._hostfile = str(path)
        return self._hostfile

    def _take(self, res: ClaimResult | None, sent_at: float) -> None:
        """Queue claimed jobs to start (in the order given); their lease is ours from ``sent_at`` at least."""
        if res is None or res.action != "job":
            return
        for job in res.jobs:
            self._learn_lease(job.lease_until - sent_at)
            self.ahead.append(_Ahead(job, sent_at + self.lease_s - self._fence_s()))

    def _fence_s(self) -> float:
        return min(self.margin_s, self.lease_s / 3)

    def _start_ahead(self, now: float, remaining: float | None, leaving: bool) -> int:
        """Start prefetched jobs while they fit; hand back those that never will (wall time) or when leaving."""
        started = 0
        while self.ahead:
            head = self.ahead[0]
            job = head.job
            if now >= head.safe_until:
                # Not renewed in time: the metaqueue may already have given it to someone else. Forget it
                # (the lease ends and it is requeued there).
                log.warning("prefetched job %s dropped: its lease may have ended", job.job_id)
                self.ahead.popleft()
                continue
            if leaving or (remaining is not None and (remaining <= 0 or (job.time_s > 0 and job.time_s > remaining))):
                self.to_release.append((job.job_id, job.attempt))
                self.ahead.popleft()
                continue
            if job.total_cpus > self.free_cpus() or (self.nodes > 1 and self.runs):
                break
            self.ahead.popleft()
            self._start(job)
            started += 1
        return started

    def _holding(self) -> list[tuple[int, int]]:
        """``(job_id, attempt)`` of every job whose lease we need: running (not killed), prefetched, and
        finished but not yet reported (held back or pending)."""
        out = [(j, r.job.attempt) for j, r in list(self.runs.items()) if not r.killed]
        out += [(a.job.job_id, a.job.attempt) for a in self.ahead]
        out += [(c.job_id, c.attempt) for c in self.pending]
        out += [(c.job_id, c.attempt) for _, c in self.held]
        return out

    def _heartbeat(self, now: float) -> bool:
        """Renew our leases (exactly those we hold) and name the runs we fenced; False if it failed."""
        with self._lock:
            fenced = list(self.fenced)
        try:
            held = self.t.heartbeat(self.id, self._holding(), fenced)
        except ConnectionError as exc:
            log.warning("heartbeat failed: %s", exc)
            return False
        with self._lock:
            del self.fenced[: len(fenced)]
        self.last_heartbeat_ok = now
        self.last_contact = now
        for jid, run in list(self.runs.items()):
            if held.get(jid) != run.job.attempt:
                self._kill(run, "lease lost or job cancelled")
        kept: deque[_Ahead] = deque()
        for a in self.ahead:
            if held.get(a.job.job_id) == a.job.attempt:
                # Renewed by this heartbeat (sent at or after ``now``).
                a.safe_until = max(a.safe_until, now + self.lease_s - self._fence_s())
                kept.append(a)
            else:
                log.warning("prefetched job %s is no longer ours (lease lost or cancelled)", a.job.job_id)
        self.ahead = kept
        return True

    def _bound_calls(self) -> None:
        """No call to the metaqueue may wait longer than a third of the lease (at least 0.5 s)."""
        self.t.bound(max(0.5, self.lease_s / 3))

    def _learn_lease(self, lease_s: float) -> None:
        # The metaqueue's lease may be shorter than we were told: heartbeat often enough for it.
        # (Assumes the placeholder's clock agrees with the server's to well within the lease.)
        if 0 < lease_s < self.lease_s - 0.5:
            self.lease_s = lease_s
            self.heartbeat_s = min(self.heartbeat_s, max(0.1, lease_s / 4))
            self._bound_calls()

    def run(self) -> str:
        """Serve until EXIT or wall time; returns ``"done"``, ``"expired"`` or ``"failed"`` (metaqueue unreachable)."""
        host = socket.gethostname()
        if self._watchdog is None:
            try:
                self._watchdog = _Watchdog(self.run_tag)
            except OSError as exc:
                log.warning("no watchdog process (%s): jobs get a parent-death signal instead", exc)
        if self._spawner is None and Spawner.available():
            try:
                self._spawner = Spawner()
            except OSError as exc:
                log.warning("jobs start with Popen: %s", exc)
        self._bound_calls()
        if self._fencer is None:
            self._fencer = _Fencer(self)
        if self._poll is not None and hasattr(os, "eventfd"):
            self._wake = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
            self._poll.register(self._wake, select.POLLIN)
            self._reporter = ThreadPoolExecutor(1, thread_name_prefix=f"report-{self.id}")
        try:
            return self._serve(host)
        except PermissionError as exc:  # refused (4xx: wrong token, a body it will not take): no retry helps
            log.error("placeholder %s leaves: %s", self.id, exc)
            return "failed"
        finally:
            with contextlib.suppress(Exception):
                self._drain()
            if self._reporter is not None:
                self._reporter.shutdown(wait=True)
                self._reporter = None
            if self._wake is not None:
                with contextlib.suppress(KeyError, ValueError):
                    if self._poll is not None:
                        self._poll.unregister(self._wake)
                os.close(self._wake)
                self._wake = None
            if self._fencer is not None:
                self._fencer.close()
                self._fencer = None
            if self._watchdog is not None:
                self._watchdog.close()
                self._watchdog = None

    def _linger_over(self, now: float) -> bool:
        """Told EXIT while idle: whether to leave now (``linger_for_s`` used up), else linger on."""
        if self.linger_for_s <= 0:
            return True
        if self.lingering_since is None:
            self.lingering_since = now
            how_long = "for ever" if math.isinf(self.linger_for_s) else f"up to {self.linger_for_s:.0f} s"
            log.info("placeholder %s: no work left, lingering %s", self.id, how_long)
            return False
        if now - self.lingering_since < self.linger_for_s:
            return False
        log.info("placeholder %s: idle for %.0f s, leaving", self.id, now - self.lingering_since)
        return True

    def _serve(self, host: str) -> str:
        while True:
            try:
                self.t.hello(self.id, self.site, host)
                self.last_contact = self.last_heartbeat_ok = time.time()
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
            if now >= next_hb:
                self._drain()
                now = time.time()
                # A failed heartbeat is tried again soon: the lease is running out.
                next_hb = now + (self.heartbeat_s if self._heartbeat(now) else min(self.heartbeat_s, 0.25))
            self._collect(0)
            if not self.runs and now - self.last_contact > self.give_up_s:
                log.error("metaqueue unreachable for %.0f s, leaving", now - self.last_contact)
                state = "failed"
                break
            if self._failing_since is not None and now - self._failing_since > self.give_up_s:
                # Heartbeats may get through while every report fails (a server error on it): leave rather
                # than retry for ever; our jobs are killed and, their leases ended, run again elsewhere.
                log.error(
                    "placeholder %s leaves: reports and claims failed for %.0f s (%d completions unreported)",
                    self.id,
                    now - self._failing_since,
                    len(self.pending),
                )
                state = "failed"
                break
            remaining = self.remaining_s(now)
            out_of_time = remaining is not None and remaining <= 0
            if out_of_time:
                state = "expired"
            # Start what was prefetched first: the database round trip below then overlaps the run.
            self._start_ahead(now, remaining, out_of_time or told_exit)
            free = self.free_cpus() if self.free_nodes() else 0
            can_claim = not out_of_time and not told_exit
            want_now = free if can_claim and not self.ahead else 0
            want_ahead = max(0, self.want_ahead() - len(self.ahead)) if can_claim else 0
            wanted = self.free(free, remaining) if want_now or want_ahead else None
            res: ClaimResult | None = None
            if self._inflight is not None:
                if self._inflight.future.done() or not self.runs:  # (nothing to overlap with: wait for it)
                    res = self._finish_report()
                    if res is None:
                        continue  # (failed: its results are pending again)
            elif now < self._retry_at:
                pass  # (backing off after a failed call)
            elif self.to_release or (self.pending and self._report_due(now)):
                self._send_report(wanted, want_ahead, overlap=not (told_exit or out_of_time))
                if self._inflight is not None and self._inflight.future.done():
                    res = self._finish_report()
            elif wanted is not None and (want_now or (not self._thin and len(self.ahead) <= self.want_ahead() // 2)):
                res = self._claim(wanted, want_ahead)
            if res is not None and res.action == "job":
                next_hb = min(next_hb, now + self.heartbeat_s)
                wait_s = 0.01
                idle_since = None
                self.lingering_since = None
                continue
            if res is not None and not self.runs and not self.ahead:
                if res.action == "exit":
                    told_exit = told_exit or self._linger_over(now)  # (an exit decided already stands)
                if res.action == "wait":
                    self.lingering_since = None
                    idle_since = idle_since or now
                    if self.idle_exit_s is not None and now - idle_since > self.idle_exit_s:
                        told_exit = True
            if (told_exit or out_of_time) and not self.runs and not self.pending and not self.held:
                if self.ahead or self._inflight is not None:  # hand them back / take the answer first
                    continue
                break
            # Sleep until a child ends (then claim again at once), a report's answer comes, the metaqueue
            # changes (idle), or a backed-off retry is due.
            pause = min(wait_s, max(0.0, next_hb - time.time()))
            if self.lingering_since is not None:  # leave on time (the claim after this pause says so)
                left = self.lingering_since + self.linger_for_s - time.time()
                if left > 0:
                    pause = min(pause, left)
            if self._retry_at > now:
                pause = min(pause, max(0.0, self._retry_at - time.time()))
            if self._inflight is not None:
                self._collect(pause if self.runs else 0)
            elif not self.runs and not self.ahead and not self.pending and not self.held:
                self.t.wait_for_work(pause)
            else:
                self._collect(pause)
            if not self.runs or self.free_cpus() > 0:
                wait_s = min(self.max_wait_s, wait_s * 2)
        with contextlib.suppress(ConnectionError, PermissionError):
            self._drain()
            self.t.bye(self.id, state)
        return state
