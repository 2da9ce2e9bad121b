"""The local command runner: argv vs shell, exit codes, stdin, env, timeouts that kill the whole group."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from metasched.runtime.remote.runner import CommandFailed, CommandRunner, CommandTimeout, LocalRunner
from tests.runtime.procs import alive


def test_is_a_command_runner() -> None:
    assert isinstance(LocalRunner(), CommandRunner)


def test_argv_is_not_shell_interpreted() -> None:
    res = LocalRunner().run(["echo", "$HOME", "a  b"])
    assert res.ok and res.stdout == "$HOME a  b\n"
    assert res.command == "echo '$HOME' 'a  b'"


def test_string_goes_through_the_shell_with_input_and_env() -> None:
    res = LocalRunner().run("read x; echo $x-$FOO; echo err >&2; exit 3", input="hi\n", env={"FOO": "bar"})
    assert (res.returncode, res.stdout, res.stderr) == (3, "hi-bar\n", "err\n")
    assert not res.ok


def test_check_raises_with_the_result() -> None:
    with pytest.raises(CommandFailed, match="exit 2: boom") as info:
        LocalRunner().run("echo boom >&2; exit 2", check=True)
    assert info.value.result.returncode == 2


def test_timeout_kills_the_process_group(tmp_path: Path) -> None:
    marker = tmp_path / "pid"
    started = time.monotonic()
    with pytest.raises(CommandTimeout, match=r"timed out after 0\.5 s"):
        # The grandchild would survive a kill of the shell alone.
        LocalRunner().run(f"sleep 30 & echo $! > {marker}; wait", timeout_s=0.5)
    assert time.monotonic() - started < 5
    pid = int(marker.read_text())
    for _ in range(50):
        if not alive(pid):
            break
        time.sleep(0.05)
    else:
        pytest.fail(f"grandchild {pid} survived the timeout")


def test_bad_timeout_and_empty_command() -> None:
    with pytest.raises(ValueError, match="timeout_s must be positive"):
        LocalRunner().run(["true"], timeout_s=0)
    with pytest.raises(ValueError, match="empty command"):
        LocalRunner().run([])


def test_put_get_copy_files_and_directories(tmp_path: Path) -> None:
    src = tmp_path / "src"
    (src / "sub").mkdir(parents=True)
    (src / "sub" / "f.txt").write_text("data")
    runner = LocalRunner()
    runner.put(src, str(tmp_path / "dst"))
    assert (tmp_path / "dst" / "sub" / "f.txt").read_text() == "data"
    runner.get(str(src / "sub" / "f.txt"), tmp_path / "back" / "g.txt")
    assert (tmp_path / "back" / "g.txt").read_text() == "data"
    with pytest.raises(FileNotFoundError, match="no such file"):
        runner.put(tmp_path / "missing", str(tmp_path / "x"))


def test_run_many_keeps_order_and_returns_errors_in_place() -> None:
    from metasched.runtime.remote.runner import run_many

    cmds = [f"sleep 0.{9 - i}; echo {i}" for i in range(6)] + ["sleep 5"]
    started = time.monotonic()
    out = run_many(LocalRunner(), cmds, parallel=7, timeout_s=1.5)
    assert time.monotonic() - started < 4  # overlapped, not 0.9+...+0.4+1.5 s in a row
    assert [r.stdout for r in out[:6]] == [f"{i}\n" for i in range(6)]  # type: ignore[union-attr]
    assert isinstance(out[6], CommandTimeout)
    assert [r.stdout for r in run_many(LocalRunner(), ["cat", "cat"], inputs=["a", "b"])] == ["a", "b"]  # type: ignore[union-attr]
    with pytest.raises(ValueError, match="parallel must be"):
        run_many(LocalRunner(), ["true"], parallel=0)


def test_missing_program_is_exit_127_like_a_shell() -> None:
    res = LocalRunner().run(["/no/such/program", "x"])
    assert res.returncode == 127 and "No such file" in res.stderr
