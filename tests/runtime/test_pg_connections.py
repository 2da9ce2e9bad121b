"""PostgreSQL connections on the hot path: pinged only after idling, a lost one is a ConnectionError, then replaced."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from metasched.runtime.metaqueue import store as store_module
from metasched.runtime.metaqueue.protocol import StoreTransport
from metasched.runtime.metaqueue.store import Store

from .conftest import PG_URL, pg_database

pytestmark = pytest.mark.live


@pytest.fixture
def pg_url() -> Iterator[str]:
    yield from pg_database()


def _kill_backends(url: str) -> int:
    import psycopg

    name = url.rsplit("/", 1)[1]
    assert PG_URL is not None
    with psycopg.connect(PG_URL, autocommit=True) as admin:
        rows = admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
            (name,),
        ).fetchall()
    return len(rows)


def test_idle_connection_is_pinged_and_replaced(pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(store_module, "PING_IDLE_S", 0.2)
    store = Store.open(pg_url)
    try:
        store.placeholder_started("p", "site", "host")
        assert _kill_backends(pg_url) >= 1
        time.sleep(0.3)
        assert store.heartbeat("p") == {}  # the dead pooled connection was pinged and replaced
    finally:
        store.close()


def test_connection_lost_while_busy_is_a_connection_error_then_recovers(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store_module, "PING_IDLE_S", 60.0)  # no ping: the loss shows at the statement
    store = Store.open(pg_url)
    transport = StoreTransport(store)
    try:
        transport.hello("p", "site", "host")
        assert _kill_backends(pg_url) >= 1
        with pytest.raises(ConnectionError, match="unreachable"):
            transport.heartbeat("p")
        assert transport.heartbeat("p") == {}  # a new connection
    finally:
        store.close()
