"""The command server behind :mod:`metasched.cli.launch` (``python -m metasched.cli.cmdserver SOCKET``).

It imports what the everyday commands need once (:data:`PRELOAD`), listens on a Unix socket that only
its user can reach (a 0700 directory, the socket 0600, and the peer's uid checked on every connection),
and for each connection forks:

* a **session** process, which reads the request (argv, environment, working directory, umask, import
  path and the client's three standard streams as file descriptors), answers ``started``, forks the
  command and relays: a signal the client forwards goes to the command's process group; the client's
  end closing (it was killed) kills the group; the command's end is sent back as ``{"exit": status}``
  (negative: the signal that killed it);
* the **command**, in its own process group, with the client's streams, directory, umask, environment
  and import path, running ``metasched`` exactly as the client would have (:func:`metasched.cli.main.main`).

Invariant: a command runs at most once per request, and only after the whole request was read;
before ``started`` the client may run the command itself, after it never does. A server whose code
changed on disk since it started (any loaded metasched module, or a directory of the import path) runs
nothing more: it closes the connection before ``started`` and leaves. It also leaves after
``METASCHED_CMDSERVER_IDLE`` seconds without a request (default 900), when its socket is removed or
replaced, and on SIGTERM. Its pid is in ``SOCKET.pid``.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import json
import os
import select
import signal
import socket
import sys
import time
import traceback
from typing import Any, NoReturn

#: Modules the everyday commands import (a missing optional one is skipped).
PRELOAD = (
    "metasched.cli.main",
    "metasched.cli.errors",
    "metasched.cli.queue",
    "metasched.client",
    "metasched.runtime.metaqueue.store",
    "metasched.runtime.metaqueue.userops",
    "metasched.runtime.metaqueue.workflow",
    "metasched.runtime.metaqueue.arrays",
    "sqlalchemy.dialects.sqlite",
    "sqlalchemy.dialects.postgresql",
    "psycopg",
    "yaml",
    "rich.console",
    "rich.table",
)
#: Largest request accepted (argv + environment), bytes.
MAX_REQUEST = 4 << 20


def preload() -> None:
    """Import :data:`PRELOAD`, then run each everyday command once against a throwaway home: what a
    command does lazily on its first run in a process (Typer building its parameters, Rich's help,
    SQLAlchemy's dialect set-up, the first store's migrations) is then done once, in this process."""
    for name in PRELOAD:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    import tempfile

    from metasched.cli.errors import run
    from metasched.cli.launch import HOT
    from metasched.cli.main import app

    saved = dict(os.environ)
    out, err = sys.stdout, sys.stderr
    try:
        with tempfile.TemporaryDirectory(prefix="metasched-warm-") as home:
            for key in (
                "METASCHED_DB",
                "METASCHED_SERVER",
                "METASCHED_TOKEN",
                "METASCHED_TOKEN_FILE",
                "METASCHED_DEBUG",
            ):
                os.environ.pop(key, None)
            os.environ["METASCHED_HOME"] = home
            with open(os.devnull, "w") as null:
                sys.stdout = sys.stderr = null
                warm = [
                    ["--help"],
                    ["version"],
                    ["submit", "--", "true"],
                    ["status"],
                    ["show", "1"],
                    ["wait", "1", "--timeout", "0"],
                ]
                warm += [[name, "--help"] for name in sorted(HOT)]
                for argv in warm:
                    with contextlib.suppress(BaseException):
                        run(app, argv)
    finally:
        sys.stdout, sys.stderr = out, err
        os.environ.clear()
        os.environ.update(saved)
        # A cache the warm-up filled with this process's streams (Rich's console, which decided on colour and
        # width for /dev/null): each command makes its own, for its terminal (tests/cli/test_cmdserver.py, pty).
        queue = sys.modules.get("metasched.cli.queue")
        if queue is not None:
            queue._console = None  # type: ignore[attr-defined]


def _code_state() -> dict[str, int]:
    """mtime (ns) of every loaded metasched module's file and of every directory of the import path."""
    state: dict[str, int] = {}
    for name, mod in list(sys.modules.items()):
        path = getattr(mod, "__file__", None)
        if path and name.split(".")[0] == "metasched":
            with contextlib.suppress(OSError):
                state[path] = os.stat(path).st_mtime_ns
    for entry in sys.path:
        if entry and os.path.isdir(entry):
            with contextlib.suppress(OSError):
                state[entry] = os.stat(entry).st_mtime_ns
    return state


def _changed(state: dict[str, int]) -> bool:
    for path, mtime in state.items():
        try:
            if os.stat(path).st_mtime_ns != mtime:
                return True
        except OSError:
            return True
    return False


def serve(path: str) -> None:
    # Nothing of the first client's but its environment: no inherited descriptor (a pipe a build tool or CI
    # waits on must not stay open for the server's lifetime), no directory, no terminal (a new session).
    os.closerange(3, max(3, os.sysconf("SC_OPEN_MAX")))
    if sys.path and sys.path[0] in ("", os.getcwd()):  # (the directory it was started in: not ours)
        del sys.path[0]
    os.chdir("/")
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    preload()
    state = _code_state()
    idle_s = float(os.environ.get("METASCHED_CMDSERVER_IDLE", "900") or 900)
    os.umask(0o077)
    tmp = f"{path}.{os.getpid()}"
    with contextlib.suppress(FileNotFoundError):
        os.unlink(tmp)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(tmp)
    listener.listen(128)
    os.rename(tmp, path)  # (atomic: a client sees the old socket or this one)
    inode = os.stat(path).st_ino
    with open(f"{path}.pid", "w") as f:
        f.write(f"{os.getpid()}\n")
    with contextlib.suppress(OSError):
        os.unlink(path + ".starting")

    def reap(*_: Any) -> None:
        with contextlib.suppress(ChildProcessError):
            while os.waitpid(-1, os.WNOHANG)[0] > 0:
                pass

    signal.signal(signal.SIGCHLD, reap)
    last = time.monotonic()
    try:
        while True:
            ready, _, _ = select.select([listener], [], [], 5.0)
            try:
                if os.stat(path).st_ino != inode:
                    return  # (replaced by a newer server)
            except OSError:
                return
            if not ready:
                if time.monotonic() - last > idle_s:
                    return
                continue
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            last = time.monotonic()
            try:
                creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12)
                uid = int.from_bytes(creds[4:8], sys.byteorder)
                if uid != os.getuid() or _changed(state):
                    conn.close()
                    if uid == os.getuid():
                        return  # (stale: the next command starts a fresh server)
                    continue
                pid = os.fork()
            except OSError:
                conn.close()
                continue
            if pid == 0:
                listener.close()
                _session(conn)
            conn.close()
    finally:
        with contextlib.suppress(OSError):
            if os.stat(path).st_ino == inode:
                os.unlink(path)
        with contextlib.suppress(OSError):
            os.unlink(f"{path}.pid")


def _recv_request(conn: socket.socket) -> tuple[dict[str, Any], list[int]]:
    conn.settimeout(30)
    head, fds, _flags, _addr = socket.recv_fds(conn, 4, 3)
    while len(head) < 4:
        more = conn.recv(4 - len(head))
        if not more:
            raise EOFError
        head += more
    size = int.from_bytes(head, "big")
    if len(fds) != 3 or size > MAX_REQUEST:
        raise EOFError
    body = b""
    while len(body) < size:
        more = conn.recv(min(1 << 16, size - len(body)))
        if not more:
            raise EOFError
        body += more
    conn.settimeout(None)
    return json.loads(body), fds


def _session(conn: socket.socket) -> NoReturn:
    """The forked session process (never returns)."""
    try:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        request, fds = _recv_request(conn)
        conn.sendall(b'{"started": true}\n')
        pid = os.fork()
        if pid == 0:
            conn.close()
            _command(request, fds)
        for fd in fds:
            os.close(fd)
        pidfd = os.pidfd_open(pid)
        buf = b""
        client_gone = False
        while True:
            watch: list[int | socket.socket] = [pidfd] if client_gone else [pidfd, conn]
            ready, _, _ = select.select(watch, [], [])
            if pidfd in ready:
                break
            data = b""
            with contextlib.suppress(OSError):
                data = conn.recv(4096)
            if not data:  # the client was killed: so is its command
                client_gone = True
                with contextlib.suppress(OSError):
                    os.killpg(pid, signal.SIGKILL)
                continue
            buf += data
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                with contextlib.suppress(ValueError, OSError, TypeError):
                    os.killpg(pid, int(json.loads(line)["signal"]))
        _, status = os.waitpid(pid, 0)
        with contextlib.suppress(OSError):
            conn.sendall(json.dumps({"exit": os.waitstatus_to_exitcode(status)}).encode() + b"\n")
    except BaseException:  # (a forked child must never return into the server's loop)
        pass
    os._exit(0)


def _stream(fd: int, mode: str, spec: list[Any] | None) -> io.TextIOWrapper:
    encoding, errors, line_buffering = spec if spec else (None, None, False)
    raw = open(fd, mode + "b", closefd=False)  # noqa: SIM115
    return io.TextIOWrapper(
        raw,
        encoding=encoding or "utf-8",
        errors=errors or "strict",
        line_buffering=bool(line_buffering),
    )


def _command(request: dict[str, Any], fds: list[int]) -> NoReturn:
    """The forked command process: becomes the client's command, then exits with its status."""
    code = 1
    try:
        os.setpgid(0, 0)
        for name in ("SIGHUP", "SIGTERM", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGWINCH"):
            signal.signal(getattr(signal, name), signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        os.chdir(request["cwd"])
        os.umask(int(request["umask"]))
        os.environ.clear()
        os.environ.update(request["env"])
        if hasattr(time, "tzset"):
            time.tzset()
        sys.path[:] = request["path"]
        sys.argv[:] = request["argv"]
        streams = request.get("streams") or [None, None, None]
        sys.stdin = _stream(0, "r", streams[0])
        sys.stdout = _stream(1, "w", streams[1])
        sys.stderr = _stream(2, "w", streams[2])
        for name in ("stdin", "stdout", "stderr"):  # (what some libraries fall back to)
            setattr(sys, f"__{name}__", getattr(sys, name))
        from metasched.cli.main import main

        try:
            main()
            code = 0
        except SystemExit as exc:
            if exc.code is None:
                code = 0
            elif isinstance(exc.code, int):
                code = exc.code
            else:
                sys.stderr.write(f"{exc.code}\n")
                code = 1
        except KeyboardInterrupt:
            code = 130
    except BaseException:  # (as Python's own last resort would)
        with contextlib.suppress(BaseException):
            traceback.print_exc()
        code = 1
    for s in (sys.stdout, sys.stderr):
        with contextlib.suppress(BaseException):
            s.flush()
    os._exit(code & 0xFF)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m metasched.cli.cmdserver SOCKET")
    serve(sys.argv[1])
