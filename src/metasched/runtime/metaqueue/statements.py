"""The SQL of the metaqueue's hot path (claim, report, heartbeat, release), written once per dialect.

Why not SQLAlchemy Core expressions here: building a ``select()`` / ``update()`` and computing its
cache key cost more Python time than the database spent on the statement (profile of a no-op job:
~60 % of the store's time). These statements are plain SQL strings built when the store opens and
run with :meth:`sqlalchemy.engine.Connection.exec_driver_sql`: the engine, the pool, the
transactions and the migrations stay SQLAlchemy's; only the per-call compilation is gone.

Written with ``:name`` parameters (what ``sqlite3`` takes) and turned into ``%(name)s`` for
psycopg. A list of ids becomes ``:i0, :i1, ...`` (one string per length, cached).
Every statement must keep the invariants of :mod:`metasched.runtime.metaqueue.store`.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any

_NAME = re.compile(r"(?<![:\w]):(\w+)")

#: The columns a placeholder gets of a claimed job (:class:`ClaimedJob` order, the lease left out).
CLAIMED_COLUMNS = "id, attempts, name, command, cwd, env, cpus, mem_mb, time_s, tasks, nodes"


class Statements:
    """The hot-path SQL for one dialect (``postgres`` or SQLite)."""

    def __init__(self, postgres: bool) -> None:
        self.postgres = postgres
        #: Is anything ready? (a read-only probe before taking the writer lock)
        self.any_ready = self._("SELECT 1 FROM jobs WHERE state = 'queued' AND pending_deps = 0 LIMIT 1")
        self.any_unfinished = self._("SELECT 1 FROM jobs WHERE state IN ('queued', 'running') LIMIT 1")
        self.seen = self._("UPDATE placeholders SET last_seen_at = :now WHERE id = :ph")
        self.event = self._(
            "INSERT INTO events (at, kind, job_id, placeholder_id, site, detail) "
            "VALUES (:at, :kind, :job_id, :placeholder_id, :site, :detail)"
        )
        self.finish = self._(
            "UPDATE jobs SET state = :state, exit_code = :exit_code, end_at = :end_at, "
            "start_at = COALESCE(:start_at, start_at), lease_until = NULL, stdout_path = :stdout_path, "
            "stderr_path = :stderr_path, reason = :reason "
            "WHERE id = :job_id AND placeholder_id = :ph AND attempts = :attempt AND state = 'running'"
        )
        #: PostgreSQL only: :attr:`finish`, its event and the release of the dependents in one statement
        #: (data-modifying WITH: the dependents are other rows than the finished job). Returns 1 row if accepted.
        self.finish_all = self._(
            "WITH f AS (UPDATE jobs SET state = :state, exit_code = :exit_code, end_at = :end_at, "
            "start_at = COALESCE(:start_at, start_at), lease_until = NULL, stdout_path = :stdout_path, "
            "stderr_path = :stderr_path, reason = :reason "
            "WHERE id = :job_id AND placeholder_id = :ph AND attempts = :attempt AND state = 'running' RETURNING id), "
            "e AS (INSERT INTO events (at, kind, job_id, placeholder_id, detail) "
            "SELECT :now, CASE WHEN EXISTS (SELECT 1 FROM f) THEN :kind ELSE 'stale_complete' END, :job_id, :ph, "
            "CASE WHEN EXISTS (SELECT 1 FROM f) THEN :detail ELSE :stale_detail END), "
            "d AS (UPDATE jobs SET pending_deps = pending_deps - 1 WHERE :state = 'done' "
            "AND id IN (SELECT job_id FROM dependencies WHERE kind <> 'notok' AND after_id IN (SELECT id FROM f))) "
            "SELECT id FROM f"
        )
        #: PostgreSQL only: the whole of a report's completions in one statement (:attr:`finish_all` for
        #: each, plus the placeholder's run count). The results arrive as arrays (``unnest``). A dependent of
        #: several jobs finished together loses as many pending dependencies. Returns the accepted
        #: ``(id, state)``. The batch must not hold a job twice (each row is updated at most once).
        self.finish_many = self._(
            "WITH r AS (SELECT * FROM unnest(:ids::int[], :attempts::int[], :codes::int[], :starts::float8[], "
            ":ends::float8[], :outs::text[], :errs::text[]) "
            "AS r(job_id, attempt, exit_code, start_at, end_at, stdout_path, stderr_path)), "
            "f AS (UPDATE jobs j SET state = CASE WHEN r.exit_code = 0 THEN 'done' ELSE 'failed' END, "
            "exit_code = r.exit_code, end_at = COALESCE(r.end_at, :now), start_at = COALESCE(r.start_at, j.start_at), "
            "lease_until = NULL, stdout_path = r.stdout_path, stderr_path = r.stderr_path, "
            "reason = CASE WHEN r.exit_code = 0 THEN '' ELSE 'exit code ' || r.exit_code END "
            "FROM r WHERE j.id = r.job_id AND j.placeholder_id = :ph AND j.attempts = r.attempt "
            "AND j.state = 'running' RETURNING j.id, j.state), "
            "e AS (INSERT INTO events (at, kind, job_id, placeholder_id, detail) "
            "SELECT :now, CASE WHEN f.id IS NULL THEN 'stale_complete' WHEN r.exit_code = 0 THEN 'done' "
            "ELSE 'failed' END, r.job_id, :ph, CASE WHEN f.id IS NULL "
            "THEN 'attempt ' || r.attempt || ' exit ' || r.exit_code ELSE 'exit ' || r.exit_code END "
            "FROM r LEFT JOIN f ON f.id = r.job_id), "
            "d AS (UPDATE jobs SET pending_deps = jobs.pending_deps - x.n FROM (SELECT job_id, count(*) AS n "
            "FROM dependencies WHERE kind <> 'notok' AND after_id IN (SELECT id FROM f WHERE state = 'done') "
            "GROUP BY job_id) x "
            "WHERE jobs.id = x.job_id), "
            "p AS (UPDATE placeholders SET jobs_run = jobs_run + (SELECT count(*) FROM f), last_seen_at = :now "
            "WHERE id = :ph AND EXISTS (SELECT 1 FROM f)) "
            "SELECT id, state FROM f"
        )
        self.ran = self._("UPDATE placeholders SET jobs_run = jobs_run + :n, last_seen_at = :now WHERE id = :ph")
        self.release_deps = self._(
            "UPDATE jobs SET pending_deps = pending_deps - 1 "
            "WHERE id IN (SELECT job_id FROM dependencies WHERE after_id = :job_id AND kind <> 'notok')"
        )
        self.renew = self._(
            "UPDATE jobs SET lease_until = :lease WHERE placeholder_id = :ph AND state = 'running' "
            "RETURNING id, attempts"
        )
        # attempts - 1: a job handed back unstarted was never tried; it must not count against its retry limit.
        self.give_back = self._(
            "UPDATE jobs SET state = 'queued', placeholder_id = NULL, site = NULL, lease_until = NULL, "
            "start_at = NULL, attempts = attempts - 1, reason = '' "
            "WHERE id = :job_id AND attempts = :attempt AND placeholder_id = :ph AND state = 'running'"
        )

    def _(self, sql: str) -> str:
        return _NAME.sub(r"%(\1)s", sql) if self.postgres else sql

    def take(self, n: int) -> str:
        """Move ``n`` chosen queued jobs (``:i0..``) to ``running`` for one placeholder, returning them."""
        return _take(self.postgres, n)


def ids_params(ids: list[int]) -> dict[str, Any]:
    return {f"i{k}": j for k, j in enumerate(ids)}


def _in(n: int) -> str:
    return ", ".join(f":i{k}" for k in range(n))


@lru_cache(maxsize=256)
def _take(postgres: bool, n: int) -> str:
    # Keep the planner on the primary key: with a bare "state = 'queued'" both SQLite (always, for two ids or
    # more) and PostgreSQL (before its first ANALYZE of a fresh table) walk ix_jobs_ready over every queued
    # job (7.5 ms for a 10-job claim with 30,000 queued). "+state" / "state || ''" cannot use that index.
    state = "state || ''" if postgres else "+state"
    sql = (
        "UPDATE jobs SET state = 'running', site = :site, placeholder_id = :ph, attempts = attempts + 1, "
        "lease_until = :lease, start_at = :now, end_at = NULL, exit_code = NULL, reason = '' "
        f"WHERE id IN ({_in(n)}) AND {state} = 'queued' RETURNING {CLAIMED_COLUMNS}"
    )
    if not postgres:
        return sql
    # PostgreSQL: the claim events are written by the same statement (a data-modifying WITH), one round trip.
    sql = (
        f"WITH t AS ({sql}), e AS (INSERT INTO events (at, kind, job_id, placeholder_id, site, detail) "
        "SELECT :now, 'claim', id, :ph, :site, '' FROM t) SELECT * FROM t"
    )
    return _NAME.sub(r"%(\1)s", sql)


def json_value(value: Any) -> Any:
    """A JSON column as read by the driver: text on SQLite, already decoded by psycopg."""
    if isinstance(value, str):
        return json.loads(value) if value not in ("{}", "") else {}
    return value if value is not None else {}
