"""Two site managers on one database (issue 33): the second manager of a site is refused, saying who holds
it; once the holder is killed (-9) a new manager takes over at once; no job runs twice. Real processes, on
SQLite and on PostgreSQL (a fresh database per test)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import text

from metasched.runtime.manager import SiteConfig, SiteLocks, SiteManager
from metasched.runtime.metaqueue.records import StoreError
from metasched.runtime.metaqueue.store import JobSpec, Store
from tests.runtime.conftest import pg_database
from tests.runtime.procs import start_logged, stop

SRC = str(Path(__file__).resolve().parents[2] / "src")


def test_second_manager_of_a_site_is_refused_and_takes_over_from_a_killed_one(tmp_path: Path, db_url: str) -> None:
    env = {**os.environ, "PYTHONPATH": SRC, "METASCHED_HOME": str(tmp_path / "home")}
    ledger = tmp_path / "ledger"
    store = Store.open(db_url, lease_s=10)
    store.submit([JobSpec(f"echo {i} >> {ledger}; sleep 0.5", name=f"j{i}") for i in range(12)])
    (tmp_path / "sites.toml").write_text('[sites.here]\nadapter = "local"\nlimit = 2\ninitial = 2\nidle_cancel = 0\n')
    run = [sys.executable, "-m", "metasched", "sites", "run", "--config", str(tmp_path / "sites.toml")]
    run += ["--db", db_url, "--interval", "0.2", "--progress-every", "0"]
    first = start_logged(run, env, tmp_path / "first.log")
    try:
        deadline = time.monotonic() + 120
        while not ledger.exists():  # the first manager's placeholders are running jobs
            assert first.poll() is None, (tmp_path / "first.log").read_text()
            assert time.monotonic() < deadline, "the first manager ran no job in 120 s"
            time.sleep(0.1)
        second = subprocess.run([*run, "--until-idle"], env=env, capture_output=True, text=True, timeout=120)
        assert second.returncode == 2, second.stderr
        (line,) = second.stderr.strip().splitlines()
        assert line.startswith("error: site 'here' is already managed by metasched sites run pid ")
        assert f"pid {first.pid} on " in line and "one site manager per site" in line
        first.send_signal(signal.SIGKILL)  # no shutdown: its session or lock file is left to the system
        first.wait(timeout=30)
        third = subprocess.run([*run, "--until-idle"], env=env, capture_output=True, text=True, timeout=240)
        assert third.returncode == 0, third.stdout + third.stderr
    finally:
        stop(first)
    assert {j["state"] for j in store.jobs()} == {"done"}
    started = Counter(ledger.read_text().split())
    assert started == Counter({str(i): 1 for i in range(12)}), "a job ran twice (or not at all)"
    done = Counter(e["job_id"] for e in store.events() if e["kind"] == "done")
    assert set(done.values()) == {1}
    store.close()


def test_managers_of_different_sites_share_a_database(tmp_path: Path, db_url: str) -> None:
    store = Store.open(db_url)
    a = SiteManager(store, [SiteConfig(name="a")], db_url=db_url, workdir=tmp_path / "ph", lock_wait_s=0)
    b = SiteManager(store, [SiteConfig(name="b")], db_url=db_url, workdir=tmp_path / "ph", lock_wait_s=0)
    with pytest.raises(StoreError, match="site 'a' is already managed by metasched sites run pid"):
        SiteManager(store, [SiteConfig(name="c"), SiteConfig(name="a")], db_url=db_url, lock_wait_s=0.3)
    a.close()
    SiteManager(store, [SiteConfig(name="c"), SiteConfig(name="a")], db_url=db_url, lock_wait_s=0).close()
    b.close()
    store.close()


@pytest.fixture
def pg_url() -> Iterator[str]:
    yield from pg_database()


@pytest.mark.live
def test_a_lost_lock_session_is_retaken_or_the_loss_reported(
    tmp_path: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PostgreSQL drops a session (server restart, network): the manager takes its site locks again on a new
    one at its next check, or, if another manager took the site meanwhile, says so instead of carrying on."""
    monkeypatch.setattr(SiteLocks, "CHECK_EVERY_S", 0.0)
    store = Store.open(pg_url)
    a = SiteManager(store, [SiteConfig(name="a")], db_url=pg_url, workdir=tmp_path / "ph", lock_wait_s=0)

    def drop_lock_session() -> None:
        # The session holding site a's advisory lock (not every session named like a's: a refused manager of
        # this process has the same name, and its backend may still be listed for a moment after it closed).
        unsigned = SiteLocks.key("a") & 0xFFFFFFFFFFFFFFFF
        with store.engine.connect() as conn:
            n = conn.execute(
                text(
                    "SELECT count(pg_terminate_backend(l.pid)) FROM pg_locks l WHERE l.locktype = 'advisory' "
                    "AND l.granted AND l.classid = :hi AND l.objid = :lo AND l.objsubid = 1"
                ),
                {"hi": unsigned >> 32, "lo": unsigned & 0xFFFFFFFF},
            ).scalar()
            conn.commit()
        assert n == 1

    drop_lock_session()
    a.tick()  # checks the locks first
    with pytest.raises(StoreError, match="site 'a' is already managed by"):
        SiteManager(store, [SiteConfig(name="a")], db_url=pg_url, lock_wait_s=0)
    drop_lock_session()
    other = SiteLocks(store, ["a"], wait_s=0)  # takes the site while a's session is gone
    with pytest.raises(StoreError, match="lost site 'a' to metasched sites run pid"):
        a.tick()
    other.release()
    a.close()
    store.close()
