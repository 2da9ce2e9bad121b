"""Fixtures of the runtime tests: stores on SQLite (always) and PostgreSQL (when the testbed runs)."""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from metasched.runtime.metaqueue.store import Store

PG_URL = os.environ.get("METASCHED_TEST_PG_URL")


def pg_database() -> Iterator[str]:
    """A fresh PostgreSQL database (dropped afterwards); skips when no server is configured."""
    if not PG_URL:
        pytest.skip("PostgreSQL not available: METASCHED_TEST_PG_URL unset (scripts/testbed/up starts one)")
    import psycopg

    name = f"mtest_{uuid.uuid4().hex[:12]}"
    try:
        admin = psycopg.connect(PG_URL, autocommit=True, connect_timeout=5)
    except psycopg.OperationalError as exc:
        pytest.skip(f"PostgreSQL at {PG_URL} unreachable: {exc}")
    with admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    base = PG_URL.rsplit("/", 1)[0]
    try:
        yield f"{base}/{name}"
    finally:
        with psycopg.connect(PG_URL, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.live)])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'mq.db'}"
    else:
        yield from pg_database()


@pytest.fixture
def store(db_url: str) -> Iterator[Store]:
    s = Store.open(db_url, lease_s=10.0)
    yield s
    s.close()


def have(*commands: str) -> bool:
    return all(shutil.which(c) for c in commands)
