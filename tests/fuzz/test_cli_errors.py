"""The one CLI error boundary (issue 33): known bad input -> ``error: <what>, <where>`` on stderr, exit
status 2, no traceback (one only with ``--debug``)."""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
from pathlib import Path

import pytest

from metasched.cli.errors import run, split_debug
from metasched.cli.main import app

ROW = "{i} {s} 0 100 4 -1 -1 4 200 -1 1 1 1 -1 1 -1 -1 -1\n"


def _cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as info:
        run(app, args)
    out, err = capsys.readouterr()
    code = info.value.code
    return (code if isinstance(code, int) else (0 if code is None else 1)), out, err


def _one_error_line(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("error: ") and "Traceback" not in err
    return lines[0]


def test_debug_flag_is_global_and_stops_at_double_dash() -> None:
    assert split_debug(["--debug", "simulate"]) == (["simulate"], True)
    assert split_debug(["submit", "--", "prog", "--debug"]) == (["submit", "--", "prog", "--debug"], False)


def test_simulate_bad_trace_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.swf"
    bad.write_text(ROW.format(i=1, s=0) + "2 5 0 100\n")
    code, _, err = _cli(["simulate", "--trace", str(bad), "--out", str(tmp_path / "out")], capsys)
    assert code == 2
    assert _one_error_line(err) == f"error: {bad}:2: expected 18 fields, found 4"


def test_simulate_truncated_gzip_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = gzip.compress("".join(ROW.format(i=i, s=i) for i in range(1, 3000)).encode())
    cut = tmp_path / "cut.swf.gz"
    cut.write_bytes(data[: len(data) // 2])
    for args in (["simulate", "--trace", str(cut), "--out", str(tmp_path / "o")], ["trace", "info", str(cut)]):
        code, _, err = _cli(args, capsys)
        assert code == 2 and "truncated gzip" in _one_error_line(err) and str(cut) in err


def test_trace_info_empty_file_says_no_jobs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    empty = tmp_path / "empty.swf"
    empty.write_text("")
    code, out, err = _cli(["trace", "info", str(empty)], capsys)
    assert code == 0 and "no jobs" in out and "nan" not in out and not err


@pytest.mark.parametrize(
    ("options", "where"),
    [
        (["--cpus", "99999999999999999999"], "--cpus"),
        (["--cpus", "0"], "--cpus"),
        (["--time", "1:-30"], "--time"),
        (["--time", "nan"], "--time"),
        (["--time", "inf"], "--time"),
        (["--mem", "1e400"], "--mem"),
        (["--licence", ""], "--licence"),
        (["--licence", "matlab:0"], "--licence"),
        (["--deadline", "0"], "--deadline"),
        (["--param", "n=nan"], "--param"),
        (["--name", "123"], "--name"),
        (["--max-attempts", "99999999999999999999"], "--max-attempts"),
    ],
)
def test_submit_option_errors_name_the_option(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], options: list[str], where: str
) -> None:
    monkeypatch.setenv("METASCHED_HOME", str(tmp_path / "home"))
    code, out, err = _cli(["submit", *options, "--", "true"], capsys)
    assert code == 2, out + err
    assert where in _one_error_line(err)


def test_workflow_errors_are_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("METASCHED_HOME", str(tmp_path / "home"))
    wf = tmp_path / "wf.yaml"
    wf.write_text("- {name: a, command: x}\n- {name: b, command: x, cpus: abc}\n")
    code, _, err = _cli(["submit-workflow", str(wf)], capsys)
    assert code == 2 and f"{wf}:2: jobs[1].cpus: cpus must be a whole number" in _one_error_line(err)
    code, _, err = _cli(["submit-workflow", str(tmp_path / "missing.yaml")], capsys)
    assert code == 2 and "missing.yaml" in _one_error_line(err)


@pytest.mark.parametrize("kind", ["file", "under_file"])
def test_bad_metasched_home_names_the_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    f = tmp_path / "plain"
    f.write_text("")
    home = f if kind == "file" else f / "home"
    monkeypatch.setenv("METASCHED_HOME", str(home))
    for args in (["status"], ["submit", "--", "true"]):
        code, _, err = _cli(args, capsys)
        assert code == 2 and str(home) in _one_error_line(err)


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only directories")
def test_read_only_metasched_home_names_the_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "ro"
    home.mkdir(mode=0o500)
    monkeypatch.setenv("METASCHED_HOME", str(home))
    code, _, err = _cli(["status"], capsys)
    assert code == 2 and str(home) in _one_error_line(err)


def test_main_is_hooked_and_debug_shows_the_traceback(tmp_path: Path) -> None:
    bad = tmp_path / "bad.swf"
    bad.write_text("1 2 x\n")
    cmd = [sys.executable, "-m", "metasched", "trace", "info", str(bad)]
    plain = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert plain.returncode == 2 and plain.stderr.startswith("error: ") and "Traceback" not in plain.stderr
    debug = subprocess.run([*cmd[:3], "--debug", *cmd[3:]], capture_output=True, text=True, timeout=120)
    assert debug.returncode == 2 and "Traceback" in debug.stderr


def test_usage_errors_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for args, where in (
        (["simulate", "--trace", str(tmp_path / "nope.swf")], "--trace"),
        (["submit", "--cpus", "abc", "--", "true"], "--cpus"),
        (["no-such-command"], "no-such-command"),
    ):
        code, _, err = _cli(args, capsys)
        assert code == 2 and where in _one_error_line(err)


def test_empty_trace_cannot_be_simulated_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    empty = tmp_path / "empty.swf"
    empty.write_text("; MaxProcs: 8\n")
    code, _, err = _cli(["simulate", "--trace", str(empty), "--out", str(tmp_path / "o")], capsys)
    assert code == 2 and "no job" in _one_error_line(err)


def test_subclasses_of_the_store_error_are_bad_input_not_bugs() -> None:
    """A TokenError (a StoreError subclass: an empty or short token file) is the user's error: one
    line and status 2, not 'internal error' (the boundary matched the exact class name before)."""
    from metasched.cli.errors import describe
    from metasched.runtime.metaqueue.secure import TokenError
    from metasched.runtime.metaqueue.store import StoreError

    assert describe(StoreError("no such job, 42")) == "no such job, 42"
    assert describe(TokenError("token too short, /x/token")) == "token too short, /x/token"
