"""Issue 33, security on the machine: private files, a watchdog that kills only what its agent started,
estimates a poisoned report cannot wreck, and placeholders that stop retrying what cannot succeed."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metasched.policy.claim import FreeResources
from metasched.runtime.metaqueue.estimates import MAX_RUN_S, OUTLIER_RATIO, Estimates
from metasched.runtime.metaqueue.protocol import HttpTransport, StoreTransport, ensure_token
from metasched.runtime.metaqueue.secure import private_dir
from metasched.runtime.metaqueue.service import create_app
from metasched.runtime.metaqueue.store import JobSpec, Store, metasched_home
from metasched.runtime.placeholder import agent as agent_module
from metasched.runtime.placeholder.agent import RUN_TAG_VAR, Agent, _Watchdog

SRC = str(Path(__file__).resolve().parents[2] / "src")
TOKEN = "local-security-token-0123456789"


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@contextlib.contextmanager
def _umask(mask: int) -> Iterator[None]:
    old = os.umask(mask)
    try:
        yield
    finally:
        os.umask(old)


def _wait(cond: Any, what: str, timeout_s: float = 60.0) -> None:
    end = time.monotonic() + timeout_s
    while not cond():
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def _alive(pid: int) -> bool:
    """Running (a zombie is dead: PID 1 in a container may be slow to reap)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


# --- files: home 0700, database and logs 0600 ------------------------------------------------------------


def test_home_database_wal_shm_and_token_are_private(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home" / ".metasched"
    monkeypatch.setenv("METASCHED_HOME", str(home))
    monkeypatch.delenv("METASCHED_DB", raising=False)
    with _umask(0o022):  # the usual umask, which made everything world-readable
        assert metasched_home() == home
        store = Store.open()
        store.submit([JobSpec("echo hi", name="a", env={"API_KEY": "hush"})])
        db = home / "metaqueue.db"
        files = [db, home / "metaqueue.db-wal", home / "metaqueue.db-shm"]
        assert all(f.exists() for f in files), sorted(p.name for p in home.iterdir())
        assert {f.name: _mode(f) for f in files} == {f.name: 0o600 for f in files}
        store.close()
        ensure_token()
    assert _mode(home) == 0o700
    assert _mode(home / "token") == 0o600


def test_an_existing_readable_database_is_made_private(tmp_path: Path) -> None:
    db = tmp_path / "q.db"
    with _umask(0o022):
        Store.open(f"sqlite:///{db}").close()
        for f in tmp_path.iterdir():
            f.chmod(0o644)
        wal = tmp_path / "q.db-wal"
        wal.touch(mode=0o644)
        store = Store.open(f"sqlite:///{db}")
        store.submit([JobSpec("true")])
        assert _mode(db) == 0o600 and _mode(wal) == 0o600  # (SQLite removes the WAL at the last close)
        store.close()


def test_a_home_open_to_others_is_reported(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    home = tmp_path / "shared"
    home.mkdir(mode=0o755)
    home.chmod(0o755)
    with caplog.at_level(logging.WARNING, logger="metasched.secure"):
        private_dir(home)
    assert f"chmod 700 {home}" in caplog.text


@pytest.mark.parametrize("spawn", [True, False], ids=["posix_spawn", "popen"])
def test_job_logs_are_private(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spawn: bool) -> None:
    if not spawn:
        monkeypatch.setattr(agent_module.Spawner, "available", staticmethod(lambda: False))
    store = Store.open(f"sqlite:///{tmp_path / 'q.db'}", lease_s=30)
    (ok, bad) = store.submit([JobSpec("echo out; echo err >&2", name="a"), JobSpec("true", cwd=str(tmp_path / "nope"))])
    logs = tmp_path / "logs"
    with _umask(0o022):
        assert Agent(StoreTransport(store), site="s", log_dir=logs, max_wait_s=0.05).run() == "done"
    names = sorted(p.name for p in logs.iterdir())
    assert names == [f"{ok}.1.err", f"{ok}.1.out", f"{bad}.1.err", f"{bad}.1.out"] or names == [
        f"{ok}.1.err",
        f"{ok}.1.out",
        f"{bad}.1.err",
    ]
    assert _mode(logs) == 0o700
    assert {n: _mode(logs / n) for n in names} == {n: 0o600 for n in names}
    assert (logs / f"{ok}.1.out").read_text() == "out\n"
    store.close()


# --- the watchdog kills what its agent started, never a name ---------------------------------------------


def test_a_listed_pid_that_is_not_the_agents_job_survives() -> None:
    """A pid on the watchdog's list that does not carry the agent run's tag (a reused pid, a stranger) is
    not killed when the agent goes; the run's own job is."""
    stranger = subprocess.Popen(["sleep", "60"], start_new_session=True)
    ours = subprocess.Popen(["sleep", "60"], env={**os.environ, RUN_TAG_VAR: "run-a"}, start_new_session=True)
    dog = _Watchdog("run-a")
    try:
        dog.started(stranger.pid)
        dog.started(ours.pid)
        dog.close()  # the agent exits: EOF on the pipe; close waits for the watchdog to finish
        assert ours.wait(timeout=30) == -signal.SIGKILL
        assert dog.proc.returncode == 0 and stranger.poll() is None
    finally:
        for p in (stranger, ours):
            if p.poll() is None:
                p.kill()
                p.wait()


def _children(pid: int) -> list[int]:
    out: list[int] = []
    for task in os.listdir(f"/proc/{pid}/task"):
        with contextlib.suppress(OSError), open(f"/proc/{pid}/task/{task}/children") as f:
            out += [int(c) for c in f.read().split()]
    return out


def _cmdline(pid: int) -> bytes:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read()
    except OSError:
        return b""


def test_two_placeholders_with_the_same_id_never_kill_each_others_jobs(tmp_path: Path) -> None:
    """Two runs of one set-up on one machine (``metasched demo`` twice: placeholders ``fast-0`` in both)
    with real processes: killing one placeholder (-9) kills its job and its job's child, and leaves the
    other placeholder's job alone."""
    agents: list[subprocess.Popen[bytes]] = []
    pidfiles: list[Path] = []
    try:
        for name in ("one", "two"):
            d = tmp_path / name
            d.mkdir()
            url = f"sqlite:///{d / 'q.db'}"
            store = Store.open(url, lease_s=30)
            pidfile = d / "pids"
            # The job leads its process group; its child (sleep &) is in the group too.
            store.submit(
                [JobSpec(f"sleep 300 & echo $$ $! > {pidfile}.tmp; mv {pidfile}.tmp {pidfile}; wait", name="fast-0")]
            )
            store.close()
            agents.append(
                subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "metasched",
                        "placeholder",
                        "--site",
                        "local",
                        "--db",
                        url,
                        "--id",
                        "fast-0",
                        "--linger",
                        "--log-dir",
                        str(d / "logs"),
                    ],
                    env={**os.environ, "PYTHONPATH": SRC, "METASCHED_HOME": str(d)},
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    start_new_session=True,
                )
            )
            pidfiles.append(pidfile)
        for p in pidfiles:
            _wait(p.exists, f"{p} (the job started)")
        (job1, kid1), (job2, kid2) = [tuple(int(x) for x in p.read_text().split()) for p in pidfiles]
        assert all(_alive(p) for p in (job1, kid1, job2, kid2))
        dogs = [c for c in _children(agents[0].pid) if b"\0-S\0-c\0" in _cmdline(c)]  # python -S -c WATCHDOG
        assert len(dogs) == 1
        agents[0].kill()
        agents[0].wait(timeout=30)
        _wait(lambda: not _alive(job1) and not _alive(kid1), "the killed placeholder's job and its child to die")
        _wait(lambda: not _alive(dogs[0]), "the watchdog to finish")
        assert _alive(job2) and _alive(kid2)  # the other placeholder's job, same names, untouched
        agents[1].kill()
        agents[1].wait(timeout=30)
        _wait(lambda: not _alive(job2) and not _alive(kid2), "the second placeholder's job to die with it")
    finally:
        for a in agents:
            if a.poll() is None:
                a.kill()
                a.wait()


# --- estimates: one poisoned report cannot make a kind never fit again ------------------------------------


def test_impossible_and_outlying_run_times_do_not_move_the_estimate() -> None:
    real = [("sim", "A", 10.0)] * 5
    for poison in (1e308, float("inf"), float("nan"), -1.0, 0.0, 1e7, MAX_RUN_S, 1e-9):
        est = Estimates([*real, ("sim", "A", poison)])
        assert est.estimate("sim", "A") == pytest.approx(10.0), poison
    # One real run, one poisoned: the smaller (lower median) decides.
    assert Estimates([("sim", "A", 10.0), ("sim", "A", 3e7)]).estimate("sim", "A") == pytest.approx(10.0)
    # Learned incrementally too.
    est = Estimates(real).extended([("sim", "A", 3e7)])
    assert est.estimate("sim", "A") == pytest.approx(10.0)
    assert [r.runs for r in est.table()] == [5]


@settings(deadline=None, max_examples=200)
@given(
    real=st.lists(st.floats(1.0, 99.0), min_size=1, max_size=12),
    wrong=st.lists(st.one_of(st.floats(1e5, 1e300), st.floats(1e-300, 1e-3)), max_size=11),
    seed=st.randoms(use_true_random=False),
)
def test_estimate_stays_within_the_real_runs_while_they_outnumber_the_wrong(
    real: list[float], wrong: list[float], seed: Any
) -> None:
    """Invariant of :mod:`~metasched.runtime.metaqueue.estimates`: real runs within a factor OUTLIER_RATIO of
    each other that outnumber the wrong reports keep the estimate within their range, in any order."""
    assert max(real) / min(real) <= OUTLIER_RATIO
    wrong = wrong[: len(real) - 1]
    runs = [("k", "A", x) for x in real + wrong]
    seed.shuffle(runs)
    got = Estimates(runs).estimate("k", "A")
    assert got is not None and min(real) * (1 - 1e-9) <= got <= max(real) * (1 + 1e-9)


def test_a_poisoned_report_does_not_stop_the_kind_from_being_claimed(tmp_path: Path) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 'q.db'}", lease_s=1e9, learn_every_s=0.0)
    store.submit([JobSpec("true", name=f"sim-{i}") for i in range(4)], now=0.0)
    for i, (start, end) in enumerate([(0.0, 100.0), (0.0, 100.0), (0.0, 1e9)]):  # the third one lies
        (j,) = store.claim("A", "p", FreeResources(1), now=float(i)).jobs
        store.complete(j.job_id, "p", 1, 0, start_at=start, end_at=end, now=float(i))
    assert store.estimates().estimate("sim", "A") == pytest.approx(100.0)
    assert [c.name for c in store.claim("A", "p", FreeResources(1, remaining_s=150.0), now=10.0).jobs] == ["sim-3"]
    store.close()


# --- placeholders: bounded retry on 5xx, no retry on 4xx --------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class _FailComplete:
    """ASGI wrapper answering 500 to every ``/v1/complete`` (a server that fails on one call), the rest as is."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.failed = 0

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"] == "/v1/complete":
            self.failed += 1
            await send({"type": "http.response.start", "status": 500, "headers": [(b"content-type", b"text/plain")]})
            await send({"type": "http.response.body", "body": b"Internal Server Error"})
            return
        await self.app(scope, receive, send)


@contextlib.contextmanager
def _server(app: Any) -> Iterator[str]:
    import uvicorn

    port = _free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    t = threading.Thread(target=server.run, daemon=True)
    t.start()
    try:
        _wait(lambda: server.started, "the server to start", 30)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        t.join(timeout=30)


def _run(agent: Agent, timeout_s: float = 120.0) -> str | None:
    out: list[str] = []
    t = threading.Thread(target=lambda: out.append(agent.run()), daemon=True)
    t.start()
    t.join(timeout_s)
    return out[0] if out else None


def test_a_placeholder_stops_retrying_a_report_the_server_keeps_failing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 'q.db'}", lease_s=30)
    store.submit([JobSpec("true", name="a")])
    app = _FailComplete(create_app(store, TOKEN))
    with _server(app) as url, caplog.at_level(logging.ERROR, logger="metasched.placeholder"):
        # Heartbeats get through (every 0.2 s, well within give_up_s): only the reports fail.
        agent = Agent(
            HttpTransport(url, TOKEN),
            site="s",
            log_dir=tmp_path / "logs",
            give_up_s=3.0,
            heartbeat_s=0.2,
            max_wait_s=0.05,
        )
        assert _run(agent) == "failed"
    assert app.failed >= 2  # it did retry (backing off) before giving up
    assert "reports and claims failed for" in caplog.text and "1 completions unreported" in caplog.text
    store.close()


def test_a_placeholder_refused_leaves_at_once_with_the_reason(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 'q.db'}", lease_s=30)
    store.submit([JobSpec("true", name="a")])
    with _server(create_app(store, TOKEN)) as url, caplog.at_level(logging.ERROR, logger="metasched.placeholder"):
        agent = Agent(HttpTransport(url, "not-the-token-0123456789"), site="s", log_dir=tmp_path / "logs")
        assert _run(agent) == "failed"
    assert "refused /v1/hello: 401" in caplog.text
    assert store.counts().get("queued") == 1
    store.close()
