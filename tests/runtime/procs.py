"""Start and stop the processes a runtime test drives, never waiting without a limit (issue 33).

Readiness is polled (an HTTP GET until it answers), never read from a starting process's pipes: a
pipe read blocks until the process writes or exits, and a server still starting under load does
neither. Output goes to a log file that is read once the process is known to be stopped.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import httpx


def start_logged(argv: Sequence[str], env: Mapping[str, str], log: Path) -> subprocess.Popen[bytes]:
    """``argv`` in the background, stdout and stderr appended to ``log``."""
    with open(log, "ab") as out:
        return subprocess.Popen(list(argv), env=dict(env), stdout=out, stderr=subprocess.STDOUT)


def wait_http(proc: subprocess.Popen[bytes], url: str, log: Path, *, timeout_s: float = 60.0) -> None:
    """Poll ``url`` until it answers 200; raise (with the log's tail) if ``proc`` exits or time runs out."""
    deadline = time.monotonic() + timeout_s
    while True:
        with contextlib.suppress(httpx.TransportError):
            if httpx.get(url, timeout=2).status_code == 200:
                return
        if proc.poll() is not None or time.monotonic() > deadline:
            why = f"exited {proc.returncode}" if proc.poll() is not None else f"not ready in {timeout_s:.0f} s"
            stop(proc)
            tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
            raise RuntimeError(f"{' '.join(map(str, proc.args))}: {why}; its log ends:\n{tail}")  # type: ignore[arg-type]
        time.sleep(0.2)


def stop(proc: subprocess.Popen[Any], *, grace_s: float = 15.0) -> bool:
    """SIGTERM, then SIGKILL after ``grace_s``; always reaped. False when it had to be killed."""
    on_term = True
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            on_term = False
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=grace_s)
    return on_term


def alive(pid: int) -> bool:
    """Running and not a zombie (a killed orphan answers ``kill -0`` until init reaps it)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False
