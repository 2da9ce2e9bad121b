"""The command server (metasched.cli.launch / cmdserver): the same command, the same result, faster.

Real processes throughout: a real server started the way a user's first command starts it, real
clients, real signals. Each test has its own runtime directory (``XDG_RUNTIME_DIR``), so its own server,
killed at the end.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.runtime.procs import alive

from metasched.cli import launch

SRC = str(Path(__file__).resolve().parents[2] / "src")
METASCHED = [sys.executable, "-m", "metasched"]


def _server_pids(run_dir: Path) -> list[int]:
    pids = []
    for pidfile in run_dir.glob("metasched/*.pid"):
        with contextlib.suppress(OSError, ValueError):
            pids.append(int(pidfile.read_text()))
    return pids


def _wait_for(predicate, timeout: float = 60.0) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


@pytest.fixture
def env(tmp_path: Path) -> Iterator[dict[str, str]]:
    # (short: a socket's path must fit in 108 bytes; pytest's tmp_path does not)
    run_dir = Path(tempfile.mkdtemp(prefix="ms-", dir="/tmp"))
    home = tmp_path / "home"
    e = {k: v for k, v in os.environ.items() if not k.startswith("METASCHED_")}
    e.update(
        {
            "PYTHONPATH": SRC,
            "XDG_RUNTIME_DIR": str(run_dir),
            "METASCHED_HOME": str(home),
            "METASCHED_CMDSERVER": "1",
            "METASCHED_CMDSERVER_IDLE": "120",
            "COLUMNS": "200",
        }
    )
    for name in launch.IN_A_JOB:
        e.pop(name, None)
    yield e
    for pid in _server_pids(run_dir):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    for pid in _server_pids(run_dir):
        _wait_for(lambda pid=pid: not alive(pid), 30)
    shutil.rmtree(run_dir, ignore_errors=True)


def run(env: dict[str, str], *args: str, mode: str = "1", **kw) -> subprocess.CompletedProcess[str]:  # type: ignore[no-untyped-def]
    return subprocess.run(
        [*METASCHED, *args],
        env={**env, "METASCHED_CMDSERVER": mode},
        capture_output=True,
        text=True,
        timeout=120,
        cwd=kw.pop("cwd", env["XDG_RUNTIME_DIR"]),
        **kw,
    )


def start_server(env: dict[str, str]) -> int:
    """The first command starts the server (and runs in its own process); wait until it listens."""
    first = run(env, "version")
    assert first.returncode == 0, first.stderr
    run_dir = Path(env["XDG_RUNTIME_DIR"])
    assert _wait_for(lambda: bool(list(run_dir.glob("metasched/*.sock"))) and bool(_server_pids(run_dir)))
    (pid,) = _server_pids(run_dir)
    probe = run(env, "version", mode="require")
    assert probe.returncode == 0, probe.stderr
    return pid


def _processes_of(pid: int) -> list[int]:
    """The server and the processes it forked (sessions, commands): same command line."""
    cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    out = []
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                if (p / "cmdline").read_bytes() == cmdline and alive(int(p.name)):
                    out.append(int(p.name))
            except OSError:
                pass
    return out


CASES = [
    ["--help"],
    ["version"],
    ["submit", "--name", "a", "--", "echo", "hi"],
    ["submit", "--after", "a", "--json", "--", "true"],
    ["submit", "--cpus", "0", "--", "true"],  # bad input: one line, exit 2
    ["submit", "--time", "1-12:00:00", "--parsable", "--", "sleep", "1"],
    ["status"],
    ["status", "--json"],
    ["status", "--state", "bogus"],
    ["show", "1"],
    ["show", "999"],
    ["status", "--no-such-option"],
    ["cancel", "3"],
    ["wait", "3"],
    ["retry", "3"],
    ["submit-workflow", "missing.yaml"],
]


def _normal(text: str) -> str:
    # Times of day differ between the two runs (the jobs were submitted at other moments).
    import re

    return re.sub(r"\d\d:\d\d:\d\d|\d{10}\.\d+|\d{10}", "T", text)


def test_same_output_and_status_as_in_its_own_process(env: dict[str, str], tmp_path: Path) -> None:
    start_server(env)
    homes = {}
    for mode in ("0", "require"):
        homes[mode] = tmp_path / f"home-{mode}"
        e = {**env, "METASCHED_HOME": str(homes[mode])}
        results = [run(e, *case, mode=mode) for case in CASES]
        homes[mode] = [(r.returncode, _normal(r.stdout), _normal(r.stderr)) for r in results]  # type: ignore[assignment]
    for case, cold, warm in zip(CASES, homes["0"], homes["require"], strict=True):
        assert warm == cold, case
    # (and the cases did what they say: a bad option is exit 2 with one line)
    assert homes["0"][4][0] == 2 and homes["0"][4][2].count("\n") == 1  # type: ignore[index]


FLOW = "- name: one\n  command: echo one\n- name: two\n  command: echo two\n  after: [one]\n"


def test_the_command_runs_in_the_clients_directory_environment_and_streams(env: dict[str, str], tmp_path: Path) -> None:
    start_server(env)
    work = tmp_path / "work dir"
    work.mkdir()
    (work / "flow.yaml").write_text(FLOW)
    other_home = tmp_path / "elsewhere"
    e = {**env, "METASCHED_HOME": str(other_home)}
    res = run(e, "submit-workflow", "flow.yaml", "--json", mode="require", cwd=work)  # (a relative path: the cwd)
    assert res.returncode == 0, res.stderr
    jobs = json.loads(res.stdout)
    assert [j["name"] for j in jobs] == ["one", "two"]
    for j in jobs:
        shown = json.loads(run(e, "show", str(j["id"]), "--json", mode="require").stdout)
        assert shown["cwd"] == str(work)
    # The environment chose the database: the default home has nothing, the other home has both jobs.
    assert json.loads(run(env, "status", "--json", mode="require").stdout) == []
    assert len(json.loads(run(e, "status", "--json", mode="require").stdout)) == 2
    assert other_home.is_dir()
    # Standard input is the client's.
    for mode in ("require", "0"):  # (a pipe is read once: it was read twice, the second time empty)
        flow = FLOW.replace("one", f"three{mode}").replace("two", f"four{mode}")
        res = run(e, "submit-workflow", "/dev/stdin", "--json", mode=mode, input=flow)
        assert res.returncode == 0, res.stderr
        assert [j["name"] for j in json.loads(res.stdout)] == [f"three{mode}", f"four{mode}"]


def test_a_signal_reaches_the_command_and_a_killed_client_takes_its_command_along(env: dict[str, str]) -> None:
    server = start_server(env)
    assert run(env, "submit", "--name", "never", "--", "true", mode="require").returncode == 0
    for how in (signal.SIGINT, signal.SIGKILL):
        client = subprocess.Popen(
            [*METASCHED, "wait", "never"],
            env={**env, "METASCHED_CMDSERVER": "require"},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            # The server, a session and the waiting command.
            assert _wait_for(lambda: len(_processes_of(server)) == 3), _processes_of(server)
            client.send_signal(how)
            _, err = client.communicate(timeout=60)
        finally:
            client.kill()
        if how == signal.SIGINT:
            assert client.returncode == 130, err  # (as in its own process: interrupted, no traceback)
            assert "Traceback" not in err
        else:
            assert client.returncode == -signal.SIGKILL
        assert _wait_for(lambda: _processes_of(server) == [server], 30), _processes_of(server)


def test_a_server_whose_code_changed_runs_nothing_and_leaves(env: dict[str, str], tmp_path: Path) -> None:
    extra = Path(env["XDG_RUNTIME_DIR"]) / "extra"
    extra.mkdir()
    e = {**env, "PYTHONPATH": f"{SRC}{os.pathsep}{extra}"}
    old = start_server(e)
    (extra / "new_module.py").write_text("")  # (the import path changed under the server)
    res = run(e, "submit", "--name", "x", "--", "true")
    assert res.returncode == 0, res.stderr  # (run in its own process instead)
    assert _wait_for(lambda: not alive(old), 30)
    assert [j["name"] for j in json.loads(run(e, "status", "--json", mode="0").stdout)] == ["x"]  # once


def test_the_socket_is_private_and_a_shared_directory_is_not_used(env: dict[str, str], tmp_path: Path) -> None:
    start_server(env)
    run_dir = Path(env["XDG_RUNTIME_DIR"]) / "metasched"
    assert stat.S_IMODE(run_dir.stat().st_mode) == 0o700
    (sock,) = run_dir.glob("*.sock")
    assert stat.S_IMODE(sock.stat().st_mode) & 0o077 == 0
    shared = Path(tempfile.mkdtemp(prefix="ms-", dir="/tmp"))
    (shared / "metasched").mkdir(mode=0o777)
    os.chmod(shared / "metasched", 0o777)
    res = run({**env, "XDG_RUNTIME_DIR": str(shared)}, "version", mode="require")
    assert res.returncode == 1 and "no command server" in res.stderr
    assert run({**env, "XDG_RUNTIME_DIR": str(shared)}, "version").returncode == 0  # (in its own process)
    assert not list((shared / "metasched").iterdir())
    shutil.rmtree(shared)


def test_an_idle_server_leaves(env: dict[str, str]) -> None:
    pid = start_server({**env, "METASCHED_CMDSERVER_IDLE": "1"})
    assert _wait_for(lambda: not alive(pid), 60)
    assert not list(Path(env["XDG_RUNTIME_DIR"]).glob("metasched/*.sock"))


@pytest.mark.parametrize(
    ("argv", "extra_env", "expected"),
    [
        (["submit", "--", "true"], {}, True),
        (["--debug", "status"], {}, True),
        ([], {}, True),
        (["status", "--help"], {}, True),
        (["placeholder", "--id", "x"], {}, False),
        (["sites", "run"], {}, False),
        (["simulate", "--trace", "x"], {}, False),
        (["--install-completion"], {}, False),
        (["submit", "--", "true"], {"SLURM_JOB_ID": "7"}, False),
        (["submit", "--", "true"], {"METASCHED_PLACEHOLDER_RUN": "abc"}, False),
        (["submit", "--", "true"], {"METASCHED_CMDSERVER": "0"}, False),
    ],
)
def test_which_commands_go_to_the_server(argv: list[str], extra_env: dict[str, str], expected: bool) -> None:
    assert launch.enabled(argv, extra_env) is expected


def test_the_client_side_loads_no_framework() -> None:
    """What a served command costs is one Python start plus this module: no Typer, Click, Rich, Pydantic or
    SQLAlchemy on the client side (they are loaded once, in the server)."""
    code = "import sys, metasched.cli.launch; print(' '.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    loaded = {m.split(".")[0] for m in out.stdout.split()}
    assert loaded.isdisjoint({"typer", "click", "rich", "pydantic", "sqlalchemy", "yaml", "numpy", "typing"})


def test_the_server_holds_no_pipe_of_the_command_that_started_it(env: dict[str, str]) -> None:
    """A CI step that waits for EOF on a pipe its command inherited must not wait for the server (it
    outlives the command by its idle time): the server keeps none of the first client's descriptors."""
    read_end, write_end = os.pipe()
    os.set_inheritable(write_end, True)
    try:
        first = subprocess.run(
            [*METASCHED, "version"], env=env, pass_fds=(write_end,), capture_output=True, timeout=120
        )
        assert first.returncode == 0
        os.close(write_end)
        run_dir = Path(env["XDG_RUNTIME_DIR"])
        assert _wait_for(lambda: bool(_server_pids(run_dir)))
        assert run(env, "version", mode="require").returncode == 0 or _wait_for(
            lambda: run(env, "version", mode="require").returncode == 0
        )
        os.set_blocking(read_end, False)
        assert _wait_for(lambda: _eof(read_end), 30)  # (every writer closed: the server holds none)
    finally:
        os.close(read_end)


def _eof(fd: int) -> bool:
    try:
        return os.read(fd, 1) == b""
    except BlockingIOError:
        return False


def _on_a_terminal(env: dict[str, str], args: list[str], mode: str) -> bytes:
    """What ``metasched ARGS`` writes to a terminal (a pty, 100 columns)."""
    import fcntl
    import pty
    import struct
    import termios

    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 100, 0, 0))
    e = {k: v for k, v in env.items() if k not in ("COLUMNS", "NO_COLOR")}
    proc = subprocess.Popen(
        [*METASCHED, *args],
        env={**e, "TERM": "xterm-256color", "METASCHED_CMDSERVER": mode},
        stdin=follower,
        stdout=follower,
        stderr=follower,
        cwd=env["XDG_RUNTIME_DIR"],
    )
    os.close(follower)
    out = b""
    try:
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # (EIO: every writer closed)
                break
            if not chunk:
                break
            out += chunk
        proc.wait(60)
    finally:
        os.close(leader)
    return out


def test_on_a_terminal_the_output_is_the_same_colours_and_width(env: dict[str, str]) -> None:
    start_server(env)
    assert run(env, "submit", "--name", "a", "--", "true", mode="0").returncode == 0
    for args, styled in ((["status"], True), (["--help"], True), (["submit", "--help"], True), (["show", "a"], False)):
        cold = _on_a_terminal(env, args, "0")
        warm = _on_a_terminal(env, args, "require")
        assert (b"\x1b[" in cold) is styled, args  # (a terminal: Rich styles the tables and the help)
        assert _normal(warm.decode()) == _normal(cold.decode()), args
