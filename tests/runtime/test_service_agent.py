"""The HTTP service (auth, protocol) and the placeholder agent running real processes on the local machine."""

from __future__ import annotations

import contextlib
import os
import signal
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

from fastapi.testclient import TestClient

from metasched.runtime.metaqueue.protocol import StoreTransport, ensure_token
from metasched.runtime.metaqueue.records import ClaimResult
from metasched.runtime.metaqueue.service import create_app
from metasched.runtime.metaqueue.store import JobSpec, Store
from metasched.runtime.placeholder.agent import Agent

SRC = str(Path(__file__).resolve().parents[2] / "src")


def test_token_file_is_private(tmp_path: Path) -> None:
    path = tmp_path / "token"
    tok = ensure_token(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert ensure_token(path) == tok and len(tok) > 30


def test_service_requires_token_and_speaks_protocol(tmp_path: Path) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 'q.db'}", lease_s=30)
    a, _b = store.submit([JobSpec("echo a", name="a"), JobSpec("echo b", name="b", after=["a"])])
    with TestClient(create_app(store, "sekrit-0123456789")) as client:
        body = {"placeholder_id": "p", "site": "s", "cpus": 2, "limit": 2}
        assert client.post("/v1/claim", json=body).status_code == 401
        bad = {"Authorization": "Bearer nope"}
        assert client.post("/v1/claim", json=body, headers=bad).status_code == 401
        h = {"Authorization": "Bearer sekrit-0123456789"}
        assert client.post("/v1/hello", json={"placeholder_id": "p", "site": "s"}, headers=h).json() == {"wait_s": None}
        r = client.post("/v1/claim", json=body, headers=h).json()
        assert r["action"] == "job" and [j["job_id"] for j in r["jobs"]] == [a]
        assert client.post("/v1/claim", json=body, headers=h).json() == {"action": "wait", "jobs": []}
        assert client.post("/v1/heartbeat", json={"placeholder_id": "p"}, headers=h).json() == {"held": {str(a): 1}}
        res = {"job_id": a, "attempt": 1, "exit_code": 0, "start_at": 1.0, "end_at": 2.0}
        out = client.post("/v1/complete", json={"placeholder_id": "x", "results": [res]}, headers=h).json()
        assert out == {"accepted": [False], "claim": None}  # not x's job
        # report and claim the next job in one call (one transaction)
        out = client.post("/v1/complete", json={"placeholder_id": "p", "results": [res], "claim": body}, headers=h)
        out = out.json()
        assert out["accepted"] == [True]
        assert out["claim"]["action"] == "job" and out["claim"]["jobs"][0]["name"] == "b"
        assert "/v1/claim" in client.get("/openapi.json").json()["paths"]
    store.close()


def _agent(store: Store, tmp_path: Path, **kw: object) -> Agent:
    return Agent(StoreTransport(store), site="local", log_dir=tmp_path / "logs", **kw)  # type: ignore[arg-type]


def test_agent_runs_dependencies_in_order(tmp_path: Path) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 'q.db'}", lease_s=30)
    ledger = tmp_path / "ledger"
    cmd = f'echo "start $METASCHED_JOB_NAME" >> {ledger}; sleep 0.1; echo "end $METASCHED_JOB_NAME" >> {ledger}'
    store.submit(
        [
            JobSpec(cmd, name="a"),
            JobSpec(cmd, name="b", after=["a"]),
            JobSpec(cmd, name="c", after=["a"]),
            JobSpec(cmd, name="d", after=["b", "c"]),
            JobSpec("echo out; echo err >&2; exit 5", name="e"),
        ]
    )
    assert _agent(store, tmp_path, cpus=2).run() == "done"
    lines = ledger.read_text().split("\n")
    pos = {ln: i for i, ln in enumerate(lines)}
    assert pos["end a"] < pos["start b"] and pos["end a"] < pos["start c"]
    assert pos["end b"] < pos["start d"] and pos["end c"] < pos["start d"]
    e = store.job("e")
    assert (e["state"], e["exit_code"]) == ("failed", 5)
    assert Path(e["stdout_path"]).read_text() == "out\n" and Path(e["stderr_path"]).read_text() == "err\n"
    assert {j["state"] for j in store.jobs() if j["name"] != "e"} == {"done"}


def test_agent_kills_cancelled_job_and_respects_wall_time(tmp_path: Path) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 'q.db'}", lease_s=2)
    marker = tmp_path / "marker"
    store.submit([JobSpec(f"sleep 3; touch {marker}", name="slow"), JobSpec("true", name="long", time_s=3600)])
    agent = _agent(store, tmp_path, wall_time_s=30, margin_s=1, idle_exit_s=1.0)
    threading.Timer(1.0, lambda: store.cancel(["slow"])).start()
    t0 = time.time()
    assert agent.run() == "done"
    time.sleep(3.0)
    assert not marker.exists()  # killed when the heartbeat said it is no longer ours
    assert time.time() - t0 < 10
    assert store.job("long")["state"] == "queued"  # never started: cannot finish within 30 s


def test_agent_expires_at_wall_time(tmp_path: Path) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 'q.db'}", lease_s=10)
    store.submit([JobSpec("sleep 0.2", name=f"j{i}") for i in range(50)])
    agent = _agent(store, tmp_path, wall_time_s=2.0, margin_s=0.5)
    assert agent.run() == "expired"
    assert 0 < store.counts().get("done", 0) < 50


def test_kill_9_of_placeholder_kills_its_job_and_job_returns_to_queue(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'q.db'}"
    store = Store.open(db, lease_s=2)
    marker, started = tmp_path / "marker", tmp_path / "started"
    store.submit([JobSpec(f"touch {started}; sleep 4; touch {marker}", name="victim")])
    env = {**os.environ, "PYTHONPATH": SRC, "METASCHED_HOME": str(tmp_path / "home")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "metasched", "placeholder", "--site", "local", "--db", db, "--lease", "2"], env=env
    )
    try:
        for _ in range(600):  # python start-up is slow on a loaded CI box
            if started.exists():  # the job's shell runs (claimed is not enough: it may not be spawned yet)
                break
            time.sleep(0.1)
        assert store.job("victim")["state"] == "running" and started.exists()
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        lost: list[int] = []
        for _ in range(100):
            lost = store.expire_leases()
            if lost:
                break
            time.sleep(0.1)
        assert lost == [store.job("victim")["id"]]
        job = store.job("victim")
        assert (job["state"], job["attempts"]) == ("queued", 1)
        time.sleep(2.0)
        assert not marker.exists()  # the child died with its placeholder
    finally:
        if proc.poll() is None:
            proc.kill()


def test_agent_leaves_when_metaqueue_stays_unreachable(tmp_path: Path) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 'q.db'}", lease_s=10)
    store.submit([JobSpec("true", name="a")])

    class Down(StoreTransport):
        def claim(self, *args: object, **kw: object) -> ClaimResult:
            raise ConnectionError("server gone")

    agent = Agent(Down(store), site="local", log_dir=tmp_path / "logs", give_up_s=1.0, max_wait_s=0.1)
    t0 = time.time()
    assert agent.run() == "failed"
    assert time.time() - t0 < 10
    assert store.job("a")["state"] == "queued"


def test_job_killed_by_sigterm_is_reported_failed_once_the_grace_is_over(tmp_path: Path) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 'q.db'}", lease_s=30)
    store.submit([JobSpec("kill -TERM $$", name="t")])
    agent = _agent(store, tmp_path, idle_exit_s=0.5)
    t0 = time.time()
    agent.run()
    job = store.job("t")
    assert (job["state"], job["exit_code"]) == ("failed", 143)
    assert time.time() - t0 >= Agent.SIGNAL_GRACE_S  # held back first: it might have been a cancellation


def test_job_killed_with_its_cancelled_placeholder_is_requeued_not_failed(tmp_path: Path) -> None:
    """scancel signals the placeholder's jobs too, and a job may die a moment before its agent: that job
    must come back to the queue (lease expiry), not count as failed and fail its dependents."""
    db = f"sqlite:///{tmp_path / 'q.db'}"
    store = Store.open(db, lease_s=2)
    started = tmp_path / "started"
    store.submit([JobSpec(f"touch {started}; kill -TERM $$", name="victim"), JobSpec("true", after=["victim"])])
    env = {**os.environ, "PYTHONPATH": SRC, "METASCHED_HOME": str(tmp_path / "home")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "metasched", "placeholder", "--site", "local", "--db", db, "--lease", "2"], env=env
    )
    try:
        for _ in range(600):
            if started.exists():
                break
            time.sleep(0.1)
        assert started.exists()
        time.sleep(0.5)  # the job is dead; its agent goes a moment later, as under scancel
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        assert store.job("victim")["state"] == "running"  # never reported failed
        for _ in range(100):
            if store.expire_leases():
                break
            time.sleep(0.1)
        job = store.job("victim")
        assert (job["state"], job["attempts"]) == ("queued", 1)
    finally:
        if proc.poll() is None:
            proc.kill()


def test_agent_fences_on_time_while_the_server_hangs_and_the_job_runs_again(tmp_path: Path) -> None:
    """A real server, stopped (SIGSTOP) while a job runs: every call to it hangs (the kernel still accepts
    connections). The agent's fencing thread must kill the job before the server's lease on it ends, whatever
    its main loop waits for; once the server goes on, the heartbeat names the fenced run, the job is requeued
    with its attempt counted and runs again, once."""
    import socket

    import httpx

    from metasched.runtime.metaqueue.protocol import HttpTransport

    db, lease = f"sqlite:///{tmp_path / 'q.db'}", 3.0
    store = Store.open(db, lease_s=lease)
    pid_file, ledger = tmp_path / "pid", tmp_path / "ledger"
    store.submit(
        [
            JobSpec(
                f'if [ "$METASCHED_ATTEMPT" = 1 ]; then echo $$ > {pid_file}; exec sleep 60; fi; echo ran >> {ledger}',
                name="victim",
            )
        ]
    )
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url, token_file = f"http://127.0.0.1:{port}", tmp_path / "token"
    secret = ensure_token(token_file)
    token = ["--token-file", str(token_file)]
    env = {**os.environ, "PYTHONPATH": SRC, "METASCHED_HOME": str(tmp_path / "home")}
    server = subprocess.Popen(
        [sys.executable, "-m", "metasched", "server", "--port", str(port), "--db", db, "--lease", str(lease), *token],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=open(tmp_path / "server.log", "ab"),  # noqa: SIM115
    )
    result: list[str] = []
    try:
        for _ in range(300):
            try:
                if httpx.get(f"{url}/openapi.json", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        agent = Agent(HttpTransport(url, secret), site="local", log_dir=tmp_path / "logs", lease_s=lease, idle_exit_s=1)
        thread = threading.Thread(target=lambda: result.append(agent.run()), daemon=True)
        thread.start()
        for _ in range(300):
            if pid_file.exists() and pid_file.read_text().strip():
                break
            time.sleep(0.05)
        job_pid = int(pid_file.read_text())
        os.kill(server.pid, signal.SIGSTOP)
        stopped_at = time.time()
        lease_until = store.job("victim")["lease_until"]  # (read from the database file: the server is stopped)
        killed_at = None
        while time.time() < stopped_at + 3 * lease:
            if _dead(job_pid):
                killed_at = time.time()
                break
            time.sleep(0.01)
        assert killed_at is not None, "the job still ran three leases after the server stopped"
        assert killed_at < lease_until, f"killed {killed_at - lease_until:.2f} s after the server's lease ended"
        os.kill(server.pid, signal.SIGCONT)
        thread.join(timeout=60)
        assert result == ["done"]
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(server.pid, signal.SIGCONT)
        server.terminate()
        server.wait(timeout=10)
    job = store.job("victim")
    assert (job["state"], job["attempts"]) == ("done", 2)
    assert ledger.read_text() == "ran\n"  # attempt 2 only, once
    assert any(e["kind"] == "lease_lost" and e["detail"] == "requeued" for e in store.events(job_id=job["id"])), (
        store.events(job_id=job["id"])
    )
    store.close()


def _dead(pid: int) -> bool:
    """Gone, or a zombie (killed, not yet reaped)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (FileNotFoundError, ProcessLookupError):
        return True
