"""The helpers that start servers for the runtime tests never wait without a limit (issue 33)."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from tests.runtime.procs import start_logged, stop, wait_http


def test_a_server_that_never_gets_ready_fails_the_wait_instead_of_hanging(tmp_path: Path) -> None:
    """A "server" that prints to stderr and then neither listens nor exits: polling gives up and says so, with
    what it printed, and the process is reaped. (Reading its stderr until EOF, as the dashboard test did,
    blocked for as long as the process lived.)"""
    log = tmp_path / "server.log"
    code = "import sys, time; print('starting up', file=sys.stderr, flush=True); time.sleep(600)"
    proc = start_logged([sys.executable, "-c", code], os.environ, log)
    with pytest.raises(RuntimeError, match=r"not ready in 2 s; its log ends:\nstarting up"):
        wait_http(proc, "http://127.0.0.1:9/", log, timeout_s=2)
    assert proc.poll() is not None


def test_a_server_that_dies_while_starting_is_reported_with_its_output(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    code = "import sys; print('error: port in use', file=sys.stderr); sys.exit(2)"
    proc = start_logged([sys.executable, "-c", code], os.environ, log)
    with pytest.raises(RuntimeError, match="exited 2; its log ends:\nerror: port in use"):
        wait_http(proc, "http://127.0.0.1:9/", log, timeout_s=60)


def test_stop_kills_what_ignores_sigterm(tmp_path: Path) -> None:
    code = "import signal as s, time; s.signal(s.SIGTERM, s.SIG_IGN); print('ready', flush=True); time.sleep(600)"
    log = tmp_path / "p.log"
    proc = start_logged([sys.executable, "-c", code], os.environ, log)
    deadline = time.monotonic() + 60
    while "ready" not in log.read_text():
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)
    stop(proc, grace_s=1)
    assert proc.returncode is not None and proc.returncode < 0
