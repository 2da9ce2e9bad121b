"""The Core tables of :mod:`metasched.runtime.metaqueue.models` are what the Alembic migrations build.

Alembic's own comparison (the one ``alembic revision --autogenerate`` runs) between a database migrated to
head and :data:`~metasched.runtime.metaqueue.models.metadata` finds no difference: a column, index or
constraint added on one side only fails here. Also on PostgreSQL when the testbed's is reachable.
"""

from __future__ import annotations

from pathlib import Path

from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

from metasched.runtime.metaqueue.models import JOBS, metadata
from metasched.runtime.metaqueue.store import HEAD_REVISION, Store


def _diff(url: str) -> list[object]:
    store = Store.open(url)
    try:
        with store.engine.connect() as conn:
            ctx = MigrationContext.configure(conn, opts={"compare_type": True, "compare_server_default": False})
            assert ctx.get_current_revision() == HEAD_REVISION
            return list(compare_metadata(ctx, metadata))
    finally:
        store.close()


def test_tables_match_migrations(db_url: str) -> None:
    assert _diff(db_url) == []


def test_a_drifted_table_is_seen(tmp_path: Path) -> None:
    """The comparison can fail: a column the migrations never add is reported."""
    from sqlalchemy import Column, Integer

    extra = Column("not_migrated", Integer, nullable=True)
    JOBS.append_column(extra)
    try:
        diff = _diff(f"sqlite:///{tmp_path / 'd.db'}")
    finally:
        JOBS._columns.remove(extra)  # type: ignore[attr-defined]
    assert any("not_migrated" in repr(d) for d in diff)
