"""The dashboard: its JSON snapshot, its auth, and the page itself in a real headless chromium.

The browser test starts ``metasched server`` on a loopback port, fills the metaqueue through the
store (two sites, placeholders, finished, running and queued jobs with dependencies), opens the page
with Playwright driving Debian's ``/usr/bin/chromium`` and checks that what the page shows is what
the store holds, then submits more jobs and checks that the page picks them up without a reload.
``METASCHED_DASHBOARD_SCREENSHOT=path`` keeps the screenshot (docs/dashboard.png is made that way).
"""

from __future__ import annotations

import os
import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from metasched.policy.claim import FreeResources
from metasched.runtime.metaqueue.dashboard import snapshot
from metasched.runtime.metaqueue.service import create_app
from metasched.runtime.metaqueue.store import JobSpec, Store
from tests.runtime.procs import start_logged, stop, wait_http

SRC = str(Path(__file__).resolve().parents[2] / "src")
CHROMIUM = Path("/usr/bin/chromium")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-quic",
    "--no-first-run",
    "--disable-component-update",
    "--disable-sync",
]
T0 = 1_700_000_000.0


def fill(store: Store, t0: float = T0) -> dict[str, int]:
    """Two sites; on ``fast`` two jobs done and one running, on ``slow`` one done; a chain still queued."""
    store.upsert_site("fast", "local", {}, {}, now=t0)
    store.upsert_site("slow", "slurm", {}, {"matlab": 2}, now=t0)
    store.set_site_target("slow", 3, now=t0)
    store.set_licence("matlab", 3, now=t0)  # global: across both sites; slow also caps it at 2
    ids = store.submit(
        [
            JobSpec("sleep 1", name="prep"),
            JobSpec("sleep 1", name="sim-1", after=["prep"]),
            JobSpec("sleep 1", name="sim-2", after=["prep"]),
            JobSpec("sleep 1", name="sim-3", after=["prep"]),
            JobSpec("sleep 1", name="merge", after=["sim-1", "sim-2", "sim-3"], licences={"matlab": 1}),
            JobSpec("sleep 1", name="report", after=["merge"]),
        ],
        now=t0,
    )
    name = dict(zip(["prep", "sim-1", "sim-2", "sim-3", "merge", "report"], ids, strict=True))
    for ph, site, t in (("ph-fast-1", "fast", t0 + 1), ("ph-slow-1", "slow", t0 + 3)):
        store.add_placeholder(ph, site, f"b{ph[-1]}", now=t0)
        store.placeholder_started(ph, site, "node", now=t)
    store.update_placeholder("ph-slow-1", decision="increase", now=t0 + 3)
    store.add_placeholder("ph-slow-2", "slow", "b9", now=t0 + 4)
    one = FreeResources(1)
    (j,) = store.claim("fast", "ph-fast-1", one, now=t0 + 1).jobs
    assert j.job_id == name["prep"]
    store.complete(j.job_id, "ph-fast-1", 1, 0, start_at=t0 + 1, end_at=t0 + 11, now=t0 + 11)
    for site, ph, start, dur in (
        ("fast", "ph-fast-1", 11, 10),
        ("slow", "ph-slow-1", 12, 25),
        ("fast", "ph-fast-1", 21, 10),
    ):
        (j,) = store.claim(site, ph, one, now=t0 + start).jobs
        store.complete(j.job_id, ph, 1, 0, start_at=t0 + start, end_at=t0 + start + dur, now=t0 + start + dur)
    (j,) = store.claim("fast", "ph-fast-1", one, now=t0 + 38).jobs
    assert j.job_id == name["merge"]
    return name


def test_snapshot_reflects_the_store(tmp_path: Path) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 'q.db'}", lease_s=1e6)
    name = fill(store)
    snap = snapshot(store, now=T0 + 40)
    by = {j["name"]: j for j in snap["jobs"]}
    assert [by[n]["state"] for n in ("prep", "sim-1", "merge", "report")] == ["done", "done", "running", "queued"]
    assert by["merge"]["after"] == sorted([name["sim-1"], name["sim-2"], name["sim-3"]])
    assert by["report"]["pending_deps"] == 1 and by["merge"]["site"] == "fast"
    sites = {s["name"]: s for s in snap["sites"]}
    assert (sites["fast"]["done_jobs"], sites["fast"]["running_jobs"], sites["slow"]["done_jobs"]) == (3, 1, 1)
    assert sites["slow"]["placeholders"] == {"running": 1, "submitted": 1} and sites["slow"]["target"] == 3
    assert sites["slow"]["decisions"] == {"increase": 1}
    assert snap["counts"]["done"] == 4 and snap["counts"]["ready"] == 0 and not snap["truncated"]
    assert snap["policy"] == "fcfs"
    assert snap["licences"] == [
        {"name": "matlab", "copies": 3, "held": 1, "sites": {"fast": [1, None], "slow": [0, 2]}}
    ]
    assert len(snapshot(store, now=T0, max_jobs=2)["jobs"]) == 2
    store.close()


def test_dashboard_auth_read_only_token(tmp_path: Path) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 'q.db'}")
    with TestClient(create_app(store, "full-0123456789abcdef", dashboard_token="peek-0123456789abcdef")) as client:
        assert client.get("/dashboard").status_code == 200  # the page holds no data
        assert "dashboard.js" in client.get("/dashboard").text
        assert client.get("/dashboard/dashboard.js").status_code == 200
        assert client.get("/dashboard/../store.py").status_code == 404
        assert client.get("/", follow_redirects=False).headers["location"] == "/dashboard"
        assert client.get("/v1/dashboard").status_code == 401
        assert client.get("/v1/dashboard", headers={"Authorization": "Bearer peek-0123456789abcdef"}).status_code == 200
        assert client.get("/v1/dashboard", headers={"Authorization": "Bearer full-0123456789abcdef"}).status_code == 200
        # the read-only token opens nothing else
        ro = {"Authorization": "Bearer peek-0123456789abcdef"}
        assert client.post("/v1/claim", json={"placeholder_id": "p", "site": "s"}, headers=ro).status_code == 401
        assert client.get("/v1/status", headers=ro).status_code == 401
    store.close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[str, str, Store]]:
    db = f"sqlite:///{tmp_path / 'q.db'}"
    store = Store.open(db, lease_s=1e6)
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": SRC, "METASCHED_HOME": str(tmp_path / "home")}
    cmd = [sys.executable, "-m", "metasched", "server", "--port", str(port), "--db", db, "--lease", "1000000"]
    cmd += ["--policy", "completion-time"]
    log = tmp_path / "server.log"
    proc = start_logged(cmd, env, log)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_http(proc, url + "/openapi.json", log)
        token = (tmp_path / "home" / "dashboard-token").read_text().strip()
        yield url, token, store
    finally:
        stop(proc)
        store.close()


@pytest.mark.skipif(
    not CHROMIUM.exists(), reason="needs Debian's chromium at /usr/bin/chromium (apt-get install chromium)"
)
def test_dashboard_in_headless_chromium(server: tuple[str, str, Store], tmp_path: Path) -> None:
    sync_api = pytest.importorskip("playwright.sync_api", reason="needs the playwright Python package")
    url, token, store = server
    name = fill(store, time.time() - 60)
    down = {"state": "down", "since": time.time() - 30, "error": "sbatch: error: Unable to process slurm.conf"}
    store.upsert_site("broken", "slurm", {"reach": down}, {})  # as the site manager records a down site
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=FLAGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1100})
        page.goto(url + "/dashboard")
        # no token yet: the page says so and shows the login form
        page.wait_for_function("document.getElementById('status').textContent.includes('token refused')")
        page.fill("#token", token)
        page.click("#login button")
        page.wait_for_function("document.body.dataset.jobs === '6'")
        assert page.inner_text("#count-done") == "done: 4" and page.inner_text("#count-running") == "running: 1"
        jobs = page.inner_text("#jobs")
        for n in name:
            assert n in jobs
        merge_row = page.locator("#jobs tr", has_text="merge").inner_text()
        assert "running" in merge_row and "fast" in merge_row
        sites = page.inner_text("#sites")
        assert "slow" in sites and "increase=1" in sites and "running=1 submitted=1" in sites
        broken_row = page.locator("#sites tr", has_text="broken").inner_text()
        assert "down since" in broken_row and "Unable to process slurm.conf" in broken_row
        assert "ph-slow-2" in page.inner_text("#placeholders")
        # the server's claim policy and the licence use (merge holds one matlab copy at fast)
        assert page.inner_text("#policy") == "claim policy: completion-time"
        licences = page.locator("#licences tr", has_text="matlab").inner_text()
        assert "matlab\t1\t3" in licences and "fast 1/-" in licences and "slow 0/2" in licences
        # the Gantt chart draws one bar per started job, the plots their points
        assert page.locator("#gantt-svg rect.gantt-bar").count() == 5
        assert page.locator("#wait-svg circle").count() == 5
        assert page.locator("#throughput-svg path").count() == 1
        # live: new work appears without a reload
        store.submit([JobSpec("true", name="late-arrival")])
        page.wait_for_function("document.body.dataset.jobs === '7'", timeout=10_000)
        assert "late-arrival" in page.inner_text("#jobs")
        # the token survives a reload (sessionStorage), and a wrong one is refused
        page.reload()
        page.wait_for_function("document.body.dataset.jobs === '7'")
        shot = Path(os.environ.get("METASCHED_DASHBOARD_SCREENSHOT") or tmp_path / "dashboard.png")
        page.screenshot(path=str(shot), full_page=True)
        assert shot.stat().st_size > 10_000
        browser.close()
