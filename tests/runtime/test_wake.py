"""No tick between work and a placeholder (issue 34): waiters wake on the store's change, not on a timer.

``Store.wait_for_change`` ends when a transaction that may make work ready commits (SQLite: any commit, seen in
``PRAGMA data_version``; PostgreSQL: ``NOTIFY``), and ``SiteManager.wait_for_work`` starts its next round as soon
as work is ready while none was. The waits here are long (minutes): a waiter that slept its time instead of
being woken would hold the thread past the join's time-out, which is what the tests detect.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from metasched.policy.claim import FreeResources
from metasched.runtime.manager import SiteManager
from metasched.runtime.metaqueue.records import JobSpec
from metasched.runtime.metaqueue.store import Store

LONG_S = 300.0


def _woken_by(wait: Callable[[], None], act: Callable[[], None]) -> bool:
    """Start ``wait`` in a thread, let it settle into its wait, ``act``; whether ``wait`` returned (well before
    its own time-out of LONG_S)."""
    done = threading.Event()

    def run() -> None:
        wait()
        done.set()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    time.sleep(0.3)  # (let the waiter reach its wait; an early return is caught below)
    if done.is_set():
        return False
    act()
    return done.wait(timeout=60)


def test_idle_store_waiter_wakes_on_submit(store: Store, db_url: str) -> None:
    store.wait_for_change(0)  # the first call starts listening (PostgreSQL) / takes the version (SQLite)
    other = Store.open(db_url)
    try:
        assert _woken_by(lambda: store.wait_for_change(LONG_S), lambda: other.submit([JobSpec(command="true")]))
    finally:
        other.close()


def test_idle_store_waiter_wakes_on_completion(store: Store, db_url: str) -> None:
    (jid,) = store.submit([JobSpec(command="true")])
    store.upsert_site("s", "local", {}, {})
    store.add_placeholder("p", "s", None)
    claimed = store.claim("s", "p", FreeResources(1))
    assert [j.job_id for j in claimed.jobs] == [jid]
    waiter = Store.open(db_url)
    try:
        waiter.wait_for_change(0)
        assert _woken_by(
            lambda: waiter.wait_for_change(LONG_S),
            lambda: store.complete(jid, "p", claimed.jobs[0].attempt, 0),
        )
    finally:
        waiter.close()


def test_manager_starts_its_round_when_work_becomes_ready(store: Store, db_url: str) -> None:
    manager = SiteManager(store, [], db_url=db_url)
    other = Store.open(db_url)
    try:
        assert _woken_by(lambda: manager.wait_for_work(LONG_S), lambda: other.submit([JobSpec(command="true")]))
    finally:
        other.close()


def test_manager_keeps_its_interval_when_no_work_is_ready(store: Store, db_url: str) -> None:
    """A change that readies nothing (a job waiting on another) does not start a round early."""
    manager = SiteManager(store, [], db_url=db_url)
    (first,) = store.submit([JobSpec(command="true", name="first")])
    store.upsert_site("s", "local", {}, {})
    store.add_placeholder("p", "s", None)
    assert store.claim("s", "p", FreeResources(1)).jobs  # running: nothing ready
    interval = 0.5
    t0 = time.monotonic()
    threading.Timer(0.1, lambda: store.submit([JobSpec(command="true", after=("first",))])).start()
    manager.wait_for_work(interval)
    assert time.monotonic() - t0 >= interval
    assert first
