"""Fault tolerance under kills, on SQLite and on PostgreSQL (issue 33): 150 jobs run by local placeholders
through the HTTP server while 30 placeholders are killed (-9) mid-job, the server is killed (-9) and restarted,
and the site manager is killed (-9) and restarted. Real processes, real signals; a fresh database per run.

Proves: every job completed, with exactly one accepted completion; no two runs of a job overlapped (each run
holds an exclusive flock on the job's lock file, a second holder logs OVERLAP); the accepted attempt ran to
its end exactly once; the restarted manager took over the site (its lock was freed by the kill) and ended
with exit status 0.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from metasched.runtime.metaqueue.store import JobSpec, Store
from tests.runtime.procs import start_logged, stop, wait_http

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]
SRC = str(Path(__file__).resolve().parents[2] / "src")
JOBS = 150
PLACEHOLDER_KILLS = 30


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _is_placeholder(pid: int, placeholder_id: str) -> bool:
    """``pid`` is still the agent process of ``placeholder_id`` (not a reused pid)."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return b"placeholder" in argv and placeholder_id.encode() in argv


def test_kills_of_placeholders_server_and_manager_lose_nothing_and_run_nothing_twice(
    tmp_path: Path, db_url: str
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    ledger, locks = tmp_path / "ledger.txt", tmp_path / "locks"
    locks.mkdir()
    env = {**os.environ, "PYTHONPATH": SRC, "METASCHED_HOME": str(home)}
    token_file, port, lease = home / "token", _free_port(), 3.0
    url = f"http://127.0.0.1:{port}"
    command = (
        f"exec 9>>{locks}/{{name}}.lock; flock -n 9 || echo OVERLAP {{name}} >> {ledger}; "
        f'echo "start {{name}} $METASCHED_ATTEMPT $(date +%s.%N)" >> {ledger}; sleep 0.5 9>&-; '
        f'echo "end {{name}} $METASCHED_ATTEMPT $(date +%s.%N)" >> {ledger}'
    )
    store = Store.open(db_url, lease_s=lease)
    # Each fault costs a job at most one attempt; 32 faults, so 40 attempts never fail a job by design.
    store.submit([JobSpec(command.format(name=f"j{i}"), name=f"j{i}", max_attempts=40) for i in range(JOBS)])
    (tmp_path / "sites.toml").write_text(
        '[sites.here]\nadapter = "local"\nlimit = 4\ninitial = 4\nlower = 4\nidle_cancel = "3s"\n'
    )
    serve = [sys.executable, "-m", "metasched", "server", "--port", str(port), "--db", db_url]
    serve += ["--lease", str(lease), "--token-file", str(token_file)]
    manage = [sys.executable, "-m", "metasched", "sites", "run", "--config", str(tmp_path / "sites.toml")]
    manage += ["--db", db_url, "--server", url, "--token-file", str(token_file), "--lease", str(lease)]
    manage += ["--interval", "0.3", "--until-idle", "--progress-every", "5", "-v"]

    def start_server() -> object:
        proc = start_logged(serve, env, tmp_path / "server.log")
        wait_http(proc, f"{url}/openapi.json", tmp_path / "server.log")
        return proc

    server = start_server()
    manager = start_logged(manage, env, tmp_path / "manager.log")
    killed: Counter[str] = Counter()
    victims: set[int] = set()
    t0 = time.monotonic()
    try:
        while not (killed["manager"] and manager.poll() is not None):
            assert time.monotonic() - t0 < 450, f"not done in 450 s: {store.counts()}, faults {dict(killed)}"
            time.sleep(0.2)
            if manager.poll() is not None and not killed["manager"]:  # the first one must not end by itself
                raise AssertionError(f"manager exited {manager.returncode}: " + (tmp_path / "manager.log").read_text())
            done = store.counts().get("done", 0)
            if killed["placeholder"] < PLACEHOLDER_KILLS and done >= 3 * killed["placeholder"] + 3:
                active = {p["id"]: p for p in store.placeholders(active_only=True)}
                for job in store.jobs(states=["running"]):
                    ph = active.get(job["placeholder_id"] or "")
                    pid = int(ph["batch_id"]) if ph and ph["batch_id"] else 0
                    if pid and pid not in victims and _is_placeholder(pid, ph["id"]):
                        os.kill(pid, signal.SIGKILL)
                        victims.add(pid)
                        killed["placeholder"] += 1
                        break
            if not killed["server"] and done >= 45:
                server.send_signal(signal.SIGKILL)  # type: ignore[attr-defined]
                server.wait(timeout=30)  # type: ignore[attr-defined]
                server = start_server()
                killed["server"] += 1
            if not killed["manager"] and done >= 75 and manager.poll() is None:
                manager.send_signal(signal.SIGKILL)
                manager.wait(timeout=30)
                manager = start_logged(manage, env, tmp_path / "manager.log")
                killed["manager"] += 1
        assert manager.wait(timeout=60) == 0, (tmp_path / "manager.log").read_text()[-3000:]
    finally:
        stop(manager)
        stop(server)  # type: ignore[arg-type]
        for p in store.placeholders():  # agents left by the killed manager: ours, by pid and command line
            if p["batch_id"] and p["batch_id"].isdigit() and _is_placeholder(int(p["batch_id"]), p["id"]):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(int(p["batch_id"]), signal.SIGKILL)
    assert killed == Counter(placeholder=PLACEHOLDER_KILLS, server=1, manager=1)

    jobs = {j["name"]: j for j in store.jobs()}
    assert len(jobs) == JOBS and {j["state"] for j in jobs.values()} == {"done"}, store.counts()
    accepted = Counter(e["job_id"] for e in store.events() if e["kind"] == "done")
    assert all(accepted[j["id"]] == 1 for j in jobs.values()), "a job was accepted as done twice"
    lines = ledger.read_text().splitlines()
    assert not [ln for ln in lines if ln.startswith("OVERLAP")], "two runs of one job at once"
    ends: dict[tuple[str, int], int] = defaultdict(int)
    for ln in lines:
        kind, name, attempt, _at = ln.split()
        if kind == "end":
            ends[(name, int(attempt))] += 1
    for name, j in jobs.items():
        assert ends[(name, j["attempts"])] == 1, f"{name}: its accepted attempt ended {ends[(name, j['attempts'])]}x"
    lost = sum(1 for e in store.events() if e["kind"] == "lease_lost")
    print(f"\n{JOBS} jobs in {time.monotonic() - t0:.0f} s; faults {dict(killed)}; leases lost {lost}")
    store.close()
