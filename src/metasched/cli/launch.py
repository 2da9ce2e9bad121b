"""The ``metasched`` entry point: hands the everyday commands to a warm command server.

A Python process that imports Typer, SQLAlchemy and the metaqueue spends ~0.3-0.4 s before doing
anything; ``metasched submit`` or ``status`` then does ~20 ms of work. So the first everyday command
(``submit``, ``status``, ``show``, ``wait``, ...: :data:`HOT`) starts a **command server** in the
background (:mod:`metasched.cli.cmdserver`), which imports all that once; later commands connect to
it over a Unix socket private to the user, pass their argv, environment, working directory, umask
and standard streams (file descriptors), and the server forks a child that runs the command exactly
as this process would have. The child's exit status is this process's; signals sent to this process
(Ctrl-C, ``kill``) are passed on, and if this process is killed outright the child is killed too.
Mercurial's ``chg`` works the same way.

This module imports only the standard library's basics (no Typer): with a server, a command costs
one Python start plus the command's own work. Without one, or whenever anything about it is not
right (no socket, a stale server after an upgrade, a directory others could write to), the command
runs here as before, in this process: the server is an accelerator, never needed.
``METASCHED_CMDSERVER=require`` makes a command that the server did not take an error instead (tests
and benchmarks use it to be sure what they measure).

It is never used for the long-lived or process-tree-sensitive commands (``placeholder``, ``sites run``,
``server``, simulations, ...), nor inside a batch job or a metasched job (the command must stay in
the job's process tree and cgroup), nor when ``METASCHED_CMDSERVER=0``. The server leaves after
``METASCHED_CMDSERVER_IDLE`` seconds without a command (default 900).
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    import socket

#: Commands the server runs (light, short or waiting, and not tied to the process tree).
HOT = frozenset(
    {"submit", "submit-workflow", "status", "show", "wait", "cancel", "retry", "logs", "version", "workflow-schema"}
)
#: Set in a batch job (Slurm, Grid Engine, PBS/Torque, LSF) or in a job run by a placeholder.
IN_A_JOB = ("SLURM_JOB_ID", "JOB_ID", "PBS_JOBID", "LSB_JOBID", "METASCHED_PLACEHOLDER_RUN")
#: Signals passed on to the command.
FORWARDED = ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGWINCH")


def enabled(argv: list[str], environ: os._Environ[str] | dict[str, str] = os.environ) -> bool:
    """Whether this command line goes to the command server."""
    if environ.get("METASCHED_CMDSERVER", "1").strip().lower() in ("0", "no", "off", "false"):
        return False
    if any(environ.get(name) for name in IN_A_JOB) or not hasattr(os, "fork") or not hasattr(os, "pidfd_open"):
        return False
    for arg in argv:
        if arg == "--":
            return False
        if arg.startswith("--install-completion") or arg.startswith("--show-completion"):
            return False  # (they look at the calling shell, which is this process's parent)
        if not arg.startswith("-"):
            return arg in HOT
    return True  # (no command: the help)


#: Longest socket directory (bytes): a Unix socket's path has 108 bytes, NUL included, for the directory,
#: ``/cmd-<16 hex>.sock`` (26) and the server's temporary ``.<pid>`` suffix (at most 8), with room to spare.
MAX_SOCKET_DIR = 63


def socket_dir() -> str | None:
    """The user's private directory for the socket (created 0700): ``$XDG_RUNTIME_DIR/metasched``, or
    ``/tmp/metasched-UID`` when that is unset or too long for a socket; None when it is not private."""
    uid = os.getuid()
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    path = os.path.join(runtime, "metasched") if runtime and os.path.isabs(runtime) else ""
    if not path or len(path.encode()) > MAX_SOCKET_DIR:
        path = os.path.join("/tmp", f"metasched-{uid}")
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    except OSError:
        return None
    try:
        st = os.lstat(path)
    except OSError:
        return None
    import stat

    if not stat.S_ISDIR(st.st_mode) or st.st_uid != uid or st.st_mode & 0o077:
        return None
    return path


def fingerprint() -> str:
    """What a server must share with this process to run its commands: the interpreter, where
    metasched is and the import path (its first entry, the script's or working directory, aside)."""
    import hashlib

    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    key = repr((sys.executable, sys.version, here, sys.path[1:], os.getuid()))
    return hashlib.sha256(key.encode()).hexdigest()[:16]


def socket_path() -> str | None:
    base = socket_dir()
    return None if base is None else os.path.join(base, f"cmd-{fingerprint()}.sock")


def main() -> None:
    argv = sys.argv[1:]
    if enabled(argv):
        code = _via_server(argv)
        if code is not None:
            _exit(code)
        if os.environ.get("METASCHED_CMDSERVER", "").strip().lower() == "require":
            sys.stderr.write(
                f"error: no command server took the command (METASCHED_CMDSERVER=require), {socket_path()}\n"
            )
            sys.exit(1)
    from metasched.cli.main import main as run_here

    run_here()


def _exit(code: int) -> None:
    if code < 0:  # the command died of a signal: so does this process
        import signal

        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
        code = 128 - code
    sys.exit(code)


def _spawn(path: str) -> None:
    """Start a server in the background (its own session, no terminal) unless one is starting."""
    starting = path + ".starting"
    try:
        import time

        st = os.stat(starting)
        if time.time() - st.st_mtime < 60:
            return
        os.unlink(starting)
    except OSError:
        pass
    try:
        os.close(os.open(starting, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    except OSError:
        return
    try:
        devnull = os.devnull
        os.posix_spawn(
            sys.executable,
            [sys.executable, "-m", "metasched.cli.cmdserver", path],
            dict(os.environ),
            file_actions=[
                (os.POSIX_SPAWN_OPEN, 0, devnull, os.O_RDONLY, 0),
                (os.POSIX_SPAWN_OPEN, 1, devnull, os.O_WRONLY, 0),
                (os.POSIX_SPAWN_DUP2, 1, 2),
            ],
            setsid=True,
        )
    except OSError:
        try:  # noqa: SIM105 - (contextlib is not imported on this path)
            os.unlink(starting)
        except OSError:
            pass


def _via_server(argv: list[str]) -> int | None:
    """Run ``argv`` on the server: its exit status (negative: killed by that signal), or None when no
    server could take it (nothing ran: the caller runs it here)."""
    import json
    import socket

    path = socket_path()
    if path is None:
        return None
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(path)
    except (FileNotFoundError, ConnectionRefusedError):
        sock.close()
        _spawn(path)
        return None
    except OSError:
        sock.close()
        return None
    try:
        umask = os.umask(0o077)
        os.umask(umask)
        streams = []
        for s in (sys.stdin, sys.stdout, sys.stderr):
            streams.append(
                None
                if s is None
                else [getattr(s, "encoding", None), getattr(s, "errors", None), getattr(s, "line_buffering", False)]
            )
        request = json.dumps(
            {
                "argv": [sys.argv[0], *argv],
                "env": dict(os.environ),
                "cwd": os.getcwd(),
                "umask": umask,
                "path": sys.path,
                "streams": streams,
            }
        ).encode()
        socket.send_fds(sock, [len(request).to_bytes(4, "big")], [0, 1, 2])
        sock.sendall(request)
    except (OSError, ValueError):
        sock.close()
        return None  # (nothing ran: the server starts a command only after the whole request)
    return _relay(sock)


def _relay(sock: socket.socket) -> int | None:
    """Pass signals on and wait for the command's end."""
    import json
    import signal

    def forward(signum: int, _frame: object) -> None:
        try:  # noqa: SIM105 - (contextlib is not imported on this path)
            sock.sendall(json.dumps({"signal": signum}).encode() + b"\n")
        except OSError:
            pass

    for name in FORWARDED:
        signal.signal(getattr(signal, name), forward)
    buf = b""
    started = False
    while True:
        try:
            chunk = sock.recv(4096)
        except OSError:
            chunk = b""
        if not chunk:
            if not started:
                return None  # (refused before running anything: a stale or leaving server)
            sys.stderr.write(
                "error: the command server ended before the command did (METASCHED_CMDSERVER=0 avoids it)\n"
            )
            return 1
        buf += chunk
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            msg = json.loads(line)
            if "started" in msg:
                started = True
            elif "exit" in msg:
                return int(msg["exit"])


if __name__ == "__main__":
    main()
