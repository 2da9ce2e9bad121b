"""Idle placeholders talking to a server are woken by it (issue 34): the ``/v1/wait`` long poll.

A real ``metasched server`` process (SQLite, and PostgreSQL when the testbed's is up). The waits asked for are
long (25 s); a wait that is not woken by the change holds past the test's bound and reports ``changed:
false``, which is what the tests detect; what an idle placeholder calls between its claims is woken the same way.
"""

from __future__ import annotations

import os
import socket
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from metasched.runtime.metaqueue.protocol import ensure_token
from metasched.runtime.metaqueue.records import JobSpec
from metasched.runtime.metaqueue.store import Store
from tests.runtime.procs import start_logged, stop, wait_http

SRC = str(Path(__file__).resolve().parents[2] / "src")
LONG_S = 25.0  # under the server's cap (30 s)


@pytest.fixture
def server(db_url: str, tmp_path: Path) -> Iterator[tuple[str, str]]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url, token_file = f"http://127.0.0.1:{port}", tmp_path / "token"
    secret = ensure_token(token_file)
    env = {**os.environ, "PYTHONPATH": SRC, "METASCHED_HOME": str(tmp_path / "home")}
    argv = [sys.executable, "-m", "metasched", "server", "--port", str(port), "--db", db_url]
    proc = start_logged([*argv, "--token-file", str(token_file)], env, tmp_path / "server.log")
    try:
        wait_http(proc, f"{url}/openapi.json", tmp_path / "server.log")
        yield url, secret
    finally:
        stop(proc)


def _wait(url: str, secret: str, since: int | None, timeout_s: float) -> dict[str, object]:
    r = httpx.post(
        f"{url}/v1/wait",
        json={"since": since, "timeout_s": timeout_s},
        headers={"Authorization": f"Bearer {secret}"},
        timeout=timeout_s + 30,
    )
    assert r.status_code == 200, r.text
    out: dict[str, object] = r.json()
    return out


def test_wait_returns_when_a_job_is_submitted(server: tuple[str, str], db_url: str) -> None:
    url, secret = server
    first = _wait(url, secret, None, LONG_S)  # no version yet: answered at once with the current one
    assert first["changed"] is False
    got: list[dict[str, object]] = []
    waiter = threading.Thread(target=lambda: got.append(_wait(url, secret, int(first["version"]), LONG_S)))  # type: ignore[call-overload]
    waiter.start()
    time.sleep(0.5)  # (let it reach its wait)
    store = Store.open(db_url)
    try:
        store.submit([JobSpec(command="true")])
    finally:
        store.close()
    waiter.join(timeout=LONG_S + 60)
    assert got and got[0]["changed"] is True
    assert int(got[0]["version"]) > int(first["version"])  # type: ignore[call-overload]


def test_wait_times_out_unchanged_and_a_stale_version_returns_at_once(server: tuple[str, str]) -> None:
    url, secret = server
    v = int(_wait(url, secret, None, 0)["version"])  # type: ignore[call-overload]
    quiet = _wait(url, secret, v, 0.3)
    assert quiet == {"version": v, "changed": False}
    stale = _wait(url, secret, v + 1000, LONG_S)  # another server's version (restarted): answered at once
    assert stale["changed"] is True and stale["version"] == v


def test_wait_bounds_and_token(server: tuple[str, str]) -> None:
    url, secret = server
    auth = {"Authorization": f"Bearer {secret}"}
    assert httpx.post(f"{url}/v1/wait", json={"since": 1, "timeout_s": 31}, headers=auth).status_code == 422
    assert httpx.post(f"{url}/v1/wait", json={"since": -1}, headers=auth).status_code == 422
    assert httpx.post(f"{url}/v1/wait", json={"since": 1}).status_code == 401


def test_placeholder_transport_wait_is_woken_by_a_submission(server: tuple[str, str], db_url: str) -> None:
    """What an idle agent calls between claims (``Transport.wait_for_work``) over HTTP returns when a job is
    submitted, long before its own time-out (which a plain sleep would use up)."""
    from metasched.runtime.metaqueue.protocol import HttpTransport

    url, secret = server
    transport = HttpTransport(url, secret, timeout_s=300)
    transport.wait_for_work(LONG_S)  # the first call learns the server's version (returns at once)
    done = threading.Event()
    waiter = threading.Thread(target=lambda: (transport.wait_for_work(LONG_S), done.set()), daemon=True)
    waiter.start()
    time.sleep(0.5)  # (let it reach its wait; an early return is caught here)
    assert not done.is_set()
    store = Store.open(db_url)
    try:
        store.submit([JobSpec(command="true")])
    finally:
        store.close()
    assert done.wait(timeout=LONG_S - 5)
    transport.close()
