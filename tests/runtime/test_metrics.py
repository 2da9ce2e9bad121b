"""``metasched server --metrics`` (issue 36, item 6): Prometheus metrics at ``/metrics``, off unless enabled,
behind the bearer token unless explicitly opened on a loopback server."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families
from typer.testing import CliRunner

from metasched.policy.claim import FreeResources
from metasched.runtime.metaqueue.models import JOBS
from metasched.runtime.metaqueue.service import create_app
from metasched.runtime.metaqueue.store import JobSpec, Store

SRC = str(Path(__file__).resolve().parents[2] / "src")
TOKEN = "protocol-token-0123456789"
DASH = "dashboard-token-0123456789"


def _samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def _by_state(samples: dict[tuple[str, tuple[tuple[str, str], ...]], float]) -> dict[str, float]:
    """Jobs per state, summed over owners (the owner label exists once jobs have owners, issue 36 item 1)."""
    out: dict[str, float] = {}
    for (name, labels), value in samples.items():
        if name == "metasched_jobs":
            state = dict(labels)["state"]
            out[state] = out.get(state, 0) + value
    return out


def test_metrics_are_off_unless_enabled(store: Store) -> None:
    with TestClient(create_app(store, TOKEN)) as client:
        assert client.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 404


def test_metrics_count_jobs_placeholders_leases_licences_and_claims(store: Store) -> None:
    store.set_licence("matlab", 3)
    store.submit(
        [
            JobSpec("true", name="a"),
            JobSpec("true", name="b", after=["a"]),
            JobSpec("true", name="c", licences={"matlab": 2}),
            JobSpec("true", name="d"),
        ]
    )
    store.upsert_site("s1", "local", {}, {"matlab": 2})
    store.add_placeholder("ph-1", "s1", "123", time.time())
    store.add_placeholder("ph-2", "s1", "124", time.time())
    store.update_placeholder("ph-2", state="running")
    # d is claimed and its lease lost (back to the queue, one loss).
    (lost,) = store.claim("s1", "ph-x", FreeResources(1), now=time.time()).jobs
    assert store.expire_leases(now=time.time() + 3600) == [lost.job_id]
    with TestClient(create_app(store, TOKEN, dashboard_token=DASH, metrics=True)) as client:
        assert client.get("/metrics").status_code == 401
        assert client.get("/metrics", headers={"Authorization": "Bearer wrong"}).status_code == 401
        # A placeholder claims through the server: c (the licence holder, first fit after a) and a run.
        body = {"placeholder_id": "ph-2", "site": "s1", "cpus": 2, "limit": 2}
        res = client.post("/v1/claim", json=body, headers={"Authorization": f"Bearer {TOKEN}"})
        assert res.status_code == 200 and len(res.json()["jobs"]) == 2
        page = client.get("/metrics", headers={"Authorization": f"Bearer {DASH}"})
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/plain")
    m = _samples(page.text)
    assert _by_state(m) == {"queued": 2.0, "running": 2.0}
    has_owner = "owner" in JOBS.c
    assert all(("owner" in dict(labels)) == has_owner for (name, labels) in m if name == "metasched_jobs")
    assert m[("metasched_jobs_ready", ())] == 1.0  # d (b waits for a)
    assert m[("metasched_placeholders", (("site", "s1"), ("state", "running")))] == 1.0
    assert m[("metasched_placeholders", (("site", "s1"), ("state", "submitted")))] == 1.0
    assert m[("metasched_lease_losses_total", ())] == 1.0
    assert m[("metasched_licence_held", (("licence", "matlab"),))] == 2.0
    assert m[("metasched_licence_copies", (("licence", "matlab"),))] == 3.0
    assert m[("metasched_claim_seconds_count", (("route", "claim"),))] == 1.0
    assert m[("metasched_claim_seconds_sum", (("route", "claim"),))] > 0


def test_lease_losses_are_counted_once_across_scrapes(store: Store) -> None:
    store.submit([JobSpec("true", name=f"j{i}") for i in range(3)])
    app = create_app(store, TOKEN, metrics=True, metrics_open=True)
    with TestClient(app) as client:
        counts = []
        for k in range(3):
            store.claim("s", f"ph{k}", FreeResources(1), now=time.time())
            store.expire_leases(now=time.time() + 3600 * (k + 1))
            counts.append(_samples(client.get("/metrics").text)[("metasched_lease_losses_total", ())])
            counts.append(_samples(client.get("/metrics").text)[("metasched_lease_losses_total", ())])
    assert counts == [1.0, 1.0, 2.0, 2.0, 3.0, 3.0]


def test_server_refuses_open_metrics_off_loopback(tmp_path: Path) -> None:
    from metasched.cli.main import app

    runner = CliRunner()
    db = f"sqlite:///{tmp_path / 'q.db'}"
    res = runner.invoke(app, ["server", "--db", db, "--metrics", "--metrics-open", "--host", "0.0.0.0"])
    assert res.exit_code == 2
    assert "error: --metrics-open serves /metrics without a token: only with a loopback --host" in res.output
    res = runner.invoke(app, ["server", "--db", db, "--metrics-open"])
    assert res.exit_code == 2 and "error: --metrics-open needs --metrics" in res.output


@pytest.mark.live
@pytest.mark.timeout(120)
def test_a_real_server_serves_metrics(tmp_path: Path) -> None:
    """``metasched server --metrics`` as a process: a scrape with the dashboard token; none without a token."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    db = f"sqlite:///{tmp_path / 'q.db'}"
    Store.open(db).submit([JobSpec("true", name="a")])
    token_file = tmp_path / "token"
    env = {**os.environ, "PYTHONPATH": SRC, "METASCHED_HOME": str(tmp_path / "home")}
    cmd = [
        sys.executable,
        "-m",
        "metasched",
        "server",
        "--db",
        db,
        "--port",
        str(port),
        "--token-file",
        str(token_file),
    ]
    proc = subprocess.Popen([*cmd, "--metrics"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        url = f"http://127.0.0.1:{port}/metrics"
        deadline = time.monotonic() + 60
        while True:
            try:
                res = httpx.get(url, timeout=5)
                break
            except httpx.TransportError:
                assert proc.poll() is None and time.monotonic() < deadline, "server did not start"
                time.sleep(0.1)
        assert res.status_code == 401
        dash = (tmp_path / "dashboard-token").read_text().strip()
        res = httpx.get(url, headers={"Authorization": f"Bearer {dash}"}, timeout=5)
        assert res.status_code == 200
        m = _samples(res.text)
        assert _by_state(m) == {"queued": 1.0} and m[("metasched_jobs_ready", ())] == 1.0
    finally:
        proc.terminate()
        proc.wait(timeout=30)
