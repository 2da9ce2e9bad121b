"""The metaqueue store: jobs, dependencies, sites, placeholders and the event log in one database.

SQLite (embedded default, WAL, one writer at a time: every transaction is ``BEGIN IMMEDIATE``) or
PostgreSQL (many users, many placeholders: claiming uses ``FOR UPDATE SKIP LOCKED``). The schema is
created and upgraded by the Alembic migrations of this package when the store is opened.

Invariants kept by every method (each runs in one transaction):

* a job is handed to at most one placeholder at a time: claiming moves it ``queued -> running``
  in the transaction that chose it, and a completion or heartbeat counts only when it comes from
  the placeholder *and attempt* that hold the job;
* ``pending_deps`` of a queued job = its dependencies not yet ``done``; a job is ready (claimable)
  only at ``pending_deps == 0``;
* a job whose dependency failed, was cancelled, or is itself "dependency failed" is
  ``dep_failed`` and never runs (until the user retries the failed root);
* the event log is append-only.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import os
import re
import secrets
import sqlite3
import statistics
import threading
import time
from collections import defaultdict, deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

from sqlalchemy import (
    Connection,
    Engine,
    Text,
    create_engine,
    event,
    func,
    insert,
    or_,
    select,
    type_coerce,
    update,
)
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DisconnectionError

from metasched.model.formula import ExpressionFormula, FormulaError
from metasched.model.job import Job
from metasched.model.licence import free_copies, held
from metasched.policy.claim import RANKING_WINDOW_JOBS, ClaimPolicy, ClaimWorld, FcfsClaim, FreeResources, SiteSlots
from metasched.runtime.metaqueue.estimates import Estimates, job_kind
from metasched.runtime.metaqueue.models import DEPS, EVENTS, FORMULAS, JOBS, LICENCES, PLACEHOLDERS, SITES, USERS
from metasched.runtime.metaqueue.records import (
    ADMIN,
    ClaimedJob,
    ClaimResult,
    JobSpec,
    NotFound,
    StoreError,
    dep_satisfied,
    dep_violated,
)
from metasched.runtime.metaqueue.secure import private_dir, private_file
from metasched.runtime.metaqueue.statements import Statements, ids_params, json_value
from metasched.runtime.metaqueue.states import BROKEN, JobState

__all__ = ["ClaimResult", "ClaimedJob", "JobSpec", "Store", "StoreError", "default_url", "metasched_home"]

#: A user's name: letters, digits, ``.``, ``_``, ``-`` (it appears in tables and URLs).
USER_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9._-]{0,99}$")
ROLES = ("user", "admin")
#: What taking a lease back needs to know of a job (see ``Store._take_back``).
_LEASED = (JOBS.c.id, JOBS.c.attempts, JOBS.c.max_attempts, JOBS.c.placeholder_id)
#: Job states whose job holds its licences (handed out and not finished: running or leased).
HOLDS_LICENCES = (JobState.RUNNING,)
#: A PostgreSQL submission of more jobs than this inserts them with ids drawn first (see :meth:`Store.submit`).
BULK_ROWS = 200

MIGRATIONS = Path(__file__).with_name("migrations")
_SQLITE_LOCKS: dict[str, threading.RLock] = {}
_SQLITE_LOCKS_GUARD = threading.Lock()
DEFAULT_LEASE_S = 60.0
#: How many of the oldest ready jobs a ranking claim policy (not ``prefix_stable``) sees per claim.
RANKING_WINDOW = RANKING_WINDOW_JOBS
#: PostgreSQL channel of the transactions that may make work ready or end it (submit, completion, release,
#: lease expiry, cancel, retry, licence limits): idle placeholders and ``sites run`` LISTEN on it.
NOTIFY_CHANNEL = "metasched_work"
#: The newest migration in ``migrations/versions`` (a test checks they agree).
HEAD_REVISION = "0005"


def metasched_home() -> Path:
    """``$METASCHED_HOME`` or ``~/.metasched`` (created 0700 on first use; see :func:`.secure.private_dir`)."""
    home = Path(os.environ.get("METASCHED_HOME") or Path.home() / ".metasched")
    if home.exists() and not home.is_dir():
        raise StoreError(f"METASCHED_HOME is not a directory, {home}")
    try:
        private_dir(home)
    except OSError as exc:
        raise StoreError(f"cannot create METASCHED_HOME ({exc.strerror}), {home}") from None
    if not os.access(home, os.W_OK | os.X_OK):
        raise StoreError(f"METASCHED_HOME is not writable, {home}")
    return home


def default_url() -> str:
    """``$METASCHED_DB`` or the embedded SQLite file in :func:`metasched_home`."""
    return os.environ.get("METASCHED_DB") or f"sqlite:///{metasched_home() / 'metaqueue.db'}"


def _sqlite_setup(engine: Engine) -> None:
    @event.listens_for(engine, "connect")
    def _connect(dbapi_connection: Any, _record: Any) -> None:
        # Let SQLAlchemy's "begin" below emit BEGIN IMMEDIATE: the writer lock is taken up front,
        # so a claim's read-then-update can never interleave with another claim.
        dbapi_connection.isolation_level = None
        cur = dbapi_connection.cursor()
        cur.execute("PRAGMA journal_mode=WAL")
        # NORMAL under WAL: a commit reaches the OS (survives kill -9 of any of our processes) but is fsync'ed
        # only at checkpoints. An OS crash or power cut of the metaqueue host may forget the last commits,
        # never corrupt the file. For a metaqueue that is a forgotten claim (the job is queued again; the
        # placeholder that got it learns at its next heartbeat that it is not its job and kills it) or a
        # forgotten completion (the job runs again): at-least-once across a host crash, as with any lease.
        # FULL would add an fsync per claim and per report (milliseconds on a disk): the throughput target
        # is out of reach with it.
        cur.execute("PRAGMA synchronous=NORMAL")
        cur.execute("PRAGMA busy_timeout=30000")
        cur.execute("PRAGMA foreign_keys=ON")
        cur.close()

    @event.listens_for(engine, "begin")
    def _begin(conn: Connection) -> None:
        conn.exec_driver_sql("BEGIN IMMEDIATE")


#: A pooled PostgreSQL connection is checked (one round trip) before use only when it sat idle this long.
PING_IDLE_S = 1.0


def _ping_when_idle(engine: Engine, idle_s: float) -> None:
    """SQLAlchemy's ``pool_pre_ping``, but only for connections idle ``idle_s`` or more.

    ``pool_pre_ping`` costs a round trip at every checkout, i.e. per transaction: on the hot path (a
    placeholder reporting every few milliseconds) one round trip in five. A connection used less than
    ``idle_s`` ago is taken as alive; if it died in that time the statement fails, SQLAlchemy
    invalidates the connection, and the caller retries (placeholders: ``ConnectionError``, see
    :class:`~metasched.runtime.metaqueue.protocol.StoreTransport`). Raising ``DisconnectionError``
    from ``checkout`` makes the pool replace the connection (SQLAlchemy's documented recipe).
    """

    @event.listens_for(engine, "checkin")
    def _checkin(_dbapi_connection: Any, record: Any) -> None:
        record.info["idle_since"] = time.monotonic()

    @event.listens_for(engine, "checkout")
    def _checkout(dbapi_connection: Any, record: Any, _proxy: Any) -> None:
        since = record.info.get("idle_since")
        if since is None or time.monotonic() - since < idle_s:
            return
        try:
            engine.dialect.do_ping(dbapi_connection)
        except Exception as exc:
            raise DisconnectionError(f"stale pooled connection: {exc}") from exc


def migrate(engine: Engine) -> None:
    """Bring the schema to the newest Alembic revision (idempotent, safe with concurrent openers)."""
    with engine.connect() as conn:
        try:
            current = conn.exec_driver_sql("SELECT version_num FROM alembic_version").scalar()
        except Exception:  # no table yet: a fresh database
            current = None
        conn.rollback()
    if current == HEAD_REVISION:
        return
    # Alembic is imported only when there is something to migrate (it costs a second at start-up).
    from alembic import command
    from alembic.config import Config
    from alembic.runtime.migration import MigrationContext

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    head = HEAD_REVISION
    with engine.begin() as conn:
        if conn.dialect.name == "postgresql":
            conn.exec_driver_sql("SELECT pg_advisory_xact_lock(727274)")
        if MigrationContext.configure(conn).get_current_revision() != head:
            cfg.attributes["connection"] = conn
            command.upgrade(cfg, "head")


class Store:
    """The metaqueue database. Open with :meth:`open`; every public method is one transaction."""

    def __init__(
        self,
        engine: Engine,
        *,
        policy: ClaimPolicy | None = None,
        lease_s: float = DEFAULT_LEASE_S,
        estimates: Estimates | None = None,
        learn_every_s: float = 5.0,
    ):
        """``estimates``: fixed run-time estimates (tests); else they are learned from the done jobs,
        again at most every ``learn_every_s`` seconds (``inf``: once)."""
        self.engine = engine
        self.policy: ClaimPolicy = policy if policy is not None else FcfsClaim()
        self.lease_s = lease_s
        self.is_postgres = engine.dialect.name == "postgresql"
        self._estimates = estimates
        self._fixed_estimates = estimates is not None
        self._learned_at = -math.inf
        self.learn_every_s = learn_every_s
        #: Learning is incremental: the jobs already learned and the last "done" event looked at.
        self._learned_ids: set[int] = set()
        self._learned_event = 0
        self._waits: dict[str, float] | None = None
        self._waits_at = -math.inf
        self._kinds: dict[object, str] = {}
        self._sql = Statements(self.is_postgres)
        self._watch: sqlite3.Connection | None = None
        self._watch_version = 0
        #: PostgreSQL: the connection LISTENing on :data:`NOTIFY_CHANNEL` (see :meth:`wait_for_change`).
        self._listen: Any = None
        #: When each placeholder's ``last_seen_at`` was last written by this process (see :meth:`_seen`).
        self._seen_at: dict[str, float] = {}
        #: Ready-job cache of :meth:`_ready_jobs`: static columns by job id, and the built jobs per
        #: (asking site, snapshot sites, estimates) with their shared estimates tables per kind.
        self._ready_rows: dict[int, tuple[Any, ...]] = {}
        self._ready_made: dict[
            tuple[object, ...], tuple[Estimates, object, dict[int, Job], dict[str, dict[str, float]]]
        ] = {}
        #: The user's run-time formulas, ``{kind: {site or "": formula}}``, re-read like the typical waits.
        self._formulas: dict[str, dict[str, ExpressionFormula]] | None = None
        self._formulas_at = -math.inf
        with _SQLITE_LOCKS_GUARD:
            self._write_lock = _SQLITE_LOCKS.setdefault(str(engine.url), threading.RLock())

    @classmethod
    def open(cls, url: str | None = None, **kwargs: Any) -> Store:
        url = url or default_url()
        parsed = make_url(url)
        if parsed.get_backend_name() == "sqlite":
            if parsed.database and parsed.database != ":memory:":
                # Jobs' commands and env: for the owner only. SQLite gives a new -wal / -shm the main file's mode.
                db = Path(parsed.database)
                try:
                    private_dir(db.parent, warn=False)
                    private_file(db)
                    for side in ("-wal", "-shm"):
                        private_file(db.with_name(db.name + side), create=False)
                except OSError as exc:
                    raise StoreError(f"cannot open the database, {db}: {exc.strerror or exc}") from None
            engine = create_engine(url, connect_args={"timeout": 30, "check_same_thread": False})
            _sqlite_setup(engine)
        elif parsed.get_backend_name() == "postgresql":
            if parsed.drivername == "postgresql":
                url = str(parsed.set(drivername="postgresql+psycopg").render_as_string(hide_password=False))
            engine = create_engine(url, pool_size=20, max_overflow=40)
            _ping_when_idle(engine, PING_IDLE_S)
        else:
            raise StoreError(f"unsupported database URL {url!r}: use sqlite:///PATH or postgresql://...")
        migrate(engine)
        return cls(engine, **kwargs)

    def close(self) -> None:
        self.close_watch()
        self.engine.dispose()

    def close_watch(self) -> None:
        """Close the connection :meth:`wait_for_change` watches with (the engine stays open)."""
        if self._watch is not None:
            self._watch.close()
            self._watch = None
        if self._listen is not None:
            self._listen.close()
            self._listen = None

    def watcher(self) -> Store:
        """A store on the same engine whose :meth:`wait_for_change` state is its own: one thread can watch
        while the others claim (a claim takes the SQLite watch version, which would hide a change from a watcher
        sharing it). Close it with :meth:`close_watch`, not :meth:`close`."""
        return Store(self.engine, policy=self.policy, lease_s=self.lease_s, estimates=self._estimates)

    def wait_for_change(self, timeout_s: float, poll_s: float = 0.002) -> bool:
        """Block up to ``timeout_s`` until another connection commits to the database (then return at once).

        On SQLite this polls ``PRAGMA data_version`` (a read of shared memory, no lock, ~10 us) every
        ``poll_s``, so an idle placeholder sees a submission within ~2 ms instead of at its next backed-off
        claim. The version is taken at each :meth:`claim`, so a commit between that claim and this call
        is not missed.

        PostgreSQL: waits for a ``NOTIFY`` on :data:`NOTIFY_CHANNEL` (sent by each transaction that may make work
        ready or end it, see :meth:`_notify`) on a connection of its own that keeps LISTENing between calls, so a
        notification sent while the caller was busy is buffered and ends the next wait at once. The first call
        only starts listening and returns (a notification sent before it cannot have been heard).

        Returns whether something may have changed (``False``: the time ran out with nothing seen).
        """
        if self.is_postgres:
            return self._wait_notify(timeout_s)
        path = self.engine.url.database
        if not path or path == ":memory:":
            time.sleep(timeout_s)
            return True
        if self._watch is None:
            self._watch = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
            self._watch_version = self._data_version()
        end = time.monotonic() + timeout_s
        while True:
            version = self._data_version()
            if version != self._watch_version:
                self._watch_version = version
                return True
            left = end - time.monotonic()
            if left <= 0:
                return False
            time.sleep(min(poll_s, left))

    def _wait_notify(self, timeout_s: float) -> bool:
        if self._listen is None:
            import psycopg

            url = self.engine.url.set(drivername="postgresql").render_as_string(hide_password=False)
            self._listen = psycopg.connect(url, autocommit=True)
            self._listen.execute(f"LISTEN {NOTIFY_CHANNEL}")
            return True
        try:
            heard = next(iter(self._listen.notifies(timeout=max(timeout_s, 0.0), stop_after=1)), None)
            if heard is not None:  # the others queued up behind it tell nothing more
                for _ in self._listen.notifies(timeout=0):
                    pass
            return heard is not None
        except Exception:  # the connection broke (server restart): listen anew at the next wait
            self._listen.close()
            self._listen = None
            return True

    def _notify(self, conn: Connection) -> None:
        """Wake the waiters of :meth:`wait_for_change` on PostgreSQL when ``conn`` commits (SQLite's waiters see
        any commit by themselves)."""
        if self.is_postgres:
            conn.exec_driver_sql(f"NOTIFY {NOTIFY_CHANNEL}")

    def is_work_ready(self) -> bool:
        """Whether some job is queued with every dependency done (one indexed read)."""
        return self._probe_ready()

    def _data_version(self) -> int:
        assert self._watch is not None
        return int(self._watch.execute("PRAGMA data_version").fetchone()[0])

    @contextmanager
    def _tx(self) -> Iterator[Connection]:
        if self.is_postgres:
            with self.engine.begin() as conn:
                yield conn
            return
        # SQLite has one writer: queue this process's writers on a lock rather than in SQLite's busy
        # handler, whose back-off sleeps (up to 100 ms) turn many threads into a convoy.
        with self._write_lock, self.engine.begin() as conn:
            yield conn

    def _event(self, conn: Connection, now: float, kind: str, **kw: Any) -> None:
        conn.execute(insert(EVENTS), [{"at": now, "kind": kind, "detail": "", **kw}])

    def _events(
        self,
        conn: Connection,
        now: float,
        kind: str,
        job_ids: Sequence[int],
        placeholder_id: str,
        site: str | None,
        detail: str,
    ) -> None:
        """One event of ``kind`` per job, in one hot-path statement (see ``statements.py``)."""
        _run(
            conn,
            self._sql.event,
            [
                {"at": now, "kind": kind, "job_id": j, "placeholder_id": placeholder_id, "site": site, "detail": detail}
                for j in job_ids
            ],
        )

    # ------------------------------------------------------------------ submit

    def resolve(
        self, conn: Connection, refs: Iterable[str], owner: str = ADMIN, see_all: bool = True
    ) -> dict[str, int]:
        """Existing jobs by name (``owner``'s names: names are unique per owner) or id (any job when
        ``see_all``, else only ``owner``'s); unknown references are left out."""
        refs = list(refs)
        out: dict[str, int] = {}
        names = [r for r in refs if not r.isdigit()]
        ids = [int(r) for r in refs if r.isdigit() and len(r) < 11]
        for chunk in _chunks(names, 500):
            q = select(JOBS.c.id, JOBS.c.name).where(JOBS.c.name.in_(chunk), JOBS.c.owner == owner)
            for jid, name in conn.execute(q):
                out[name] = jid
        for chunk in _chunks(ids, 500):
            by_id = select(JOBS.c.id).where(JOBS.c.id.in_(chunk))
            if not see_all:
                by_id = by_id.where(JOBS.c.owner == owner)
            for (jid,) in conn.execute(by_id):
                out[str(jid)] = jid
        return out

    def submit(
        self, specs: Sequence[JobSpec], now: float | None = None, *, owner: str = ADMIN, see_all: bool = True
    ) -> list[int]:
        """Add jobs (a workflow) atomically for ``owner``; returns their ids in ``specs`` order.

        Refuses, naming the culprits: duplicate or already-used names (of this owner), unknown
        dependencies (another user's job is unknown unless ``see_all``), dependency cycles. Jobs are
        inserted in a topological order of the batch.
        """
        now = time.time() if now is None else now
        if not specs:
            return []
        batch: dict[str, int] = {}
        for i, spec in enumerate(specs):
            spec.validate()
            if spec.name is not None:
                if spec.name in batch:
                    raise StoreError(f"duplicate job name {spec.name!r} in this submission")
                batch[spec.name] = i
        names = dict(batch)
        for spec in specs:
            for ref in spec.after:
                # "\0<i>": the i-th job of this submission (arrays' throttle; no name needed).
                if ref.startswith("\0") and ref[1:].isdigit() and int(ref[1:]) < len(specs):
                    batch[ref] = int(ref[1:])
        order = _topological(specs, batch)
        with self._tx() as conn:
            taken = self.resolve(conn, names, owner)
            if taken:
                raise StoreError(f"job name(s) already in the metaqueue: {', '.join(sorted(taken))}")
            outside = {r for s in specs for r in s.after if r not in batch}
            known = self.resolve(conn, outside, owner, see_all)
            unknown = sorted(outside - set(known))
            if unknown:
                raise StoreError(f"unknown dependencies: {', '.join(unknown)}")
            ext_state: dict[int, str] = {}
            for chunk in _chunks(sorted(set(known.values())), 500):
                for jid, st in conn.execute(select(JOBS.c.id, JOBS.c.state).where(JOBS.c.id.in_(chunk))):
                    ext_state[jid] = st
            ids: list[int] = [0] * len(specs)
            state_of: list[str] = [""] * len(specs)
            rows = []
            for i in order:
                spec = specs[i]
                pending, broken, why = 0, None, ""
                for ref in dict.fromkeys(spec.after):
                    st = state_of[batch[ref]] if ref in batch else ext_state[known[ref]]
                    kind = spec.after_kinds.get(ref, "ok")
                    if dep_violated(kind, st):
                        broken, why = ref, _never_reason(ref, kind, st)
                    elif not dep_satisfied(kind, st):
                        pending += 1
                state = JobState.DEP_FAILED if broken else JobState.QUEUED
                state_of[i] = state
                rows.append(
                    {
                        "name": spec.name,
                        "owner": owner,
                        "command": spec.command,
                        "cwd": spec.cwd,
                        "env": spec.env,
                        "cpus": spec.cpus,
                        "tasks": spec.tasks,
                        "nodes": spec.nodes,
                        "mem_mb": spec.mem_mb,
                        "licences": spec.licences,
                        "time_s": float(spec.time_s),
                        "deadline_at": None if spec.deadline_s is None else now + spec.deadline_s,
                        "user_class": spec.user_class,
                        "params": dict(spec.params) or None,
                        "state": state,
                        "pending_deps": pending,
                        "attempts": 0,
                        "max_attempts": spec.max_attempts,
                        "reason": why,
                        "submit_at": now,
                    }
                )
            if self.is_postgres and len(rows) > BULK_ROWS:
                # A large submission (an array): ids drawn from the sequence first, then a plain executemany
                # (psycopg's pipeline: one statement parsed once), not one giant INSERT ... RETURNING whose
                # text psycopg must scan (~4x slower at 10,000 jobs).
                drawn = sorted(
                    jid
                    for (jid,) in conn.exec_driver_sql(
                        "SELECT nextval(pg_get_serial_sequence('jobs', 'id')) FROM generate_series(1, %(n)s)",
                        {"n": len(rows)},
                    )
                )
                for row, jid in zip(rows, drawn, strict=True):
                    row["id"] = jid
                conn.execute(insert(JOBS), rows)
                for i, jid in zip(order, drawn, strict=True):
                    ids[i] = jid
            else:
                result = conn.execute(insert(JOBS).returning(JOBS.c.id, sort_by_parameter_order=True), rows)
                for i, (jid,) in zip(order, result.all(), strict=True):
                    ids[i] = jid
            dep_rows = []
            for i, spec in enumerate(specs):
                for ref in dict.fromkeys(spec.after):
                    after = ids[batch[ref]] if ref in batch else known[ref]
                    dep_rows.append({"job_id": ids[i], "after_id": after, "kind": spec.after_kinds.get(ref, "ok")})
            if dep_rows:
                conn.execute(insert(DEPS), dep_rows)
            conn.execute(insert(EVENTS), [{"at": now, "kind": "submit", "job_id": j, "detail": ""} for j in ids])
            self._notify(conn)
        return ids

    # ------------------------------------------------------------------ claim

    def claim(
        self,
        site: str,
        placeholder_id: str,
        free: FreeResources,
        *,
        limit: int = 1,
        now: float | None = None,
        window: int = 2048,
        ahead: int = 0,
        whole: FreeResources | None = None,
    ) -> ClaimResult:
        """Hand up to ``limit`` ready jobs to ``placeholder_id`` at ``site`` (chosen by the claim policy).

        One transaction: the ready candidates are read (locked with ``FOR UPDATE SKIP LOCKED`` on
        PostgreSQL; SQLite holds the writer lock since ``BEGIN IMMEDIATE``), the policy chooses,
        the chosen move to ``running`` with a lease. ``wait`` when unfinished work exists but none
        suits this placeholder now; ``exit`` when nothing is queued or running.

        ``ahead`` (prefetch): also up to that many jobs for the placeholder to run *next*, one after
        another in its ``whole`` size (see :meth:`_ahead`). They are leased and ``running`` like the
        others from this instant: never handed to anyone else, back in the queue if the lease is lost.
        """
        now = time.time() if now is None else now
        if self._watch is not None:
            self._watch_version = self._data_version()
        if not self.is_postgres and not self._probe_ready():
            # Nothing ready: answer wait / exit from a read transaction, without queueing for the writer lock
            # (an idle placeholder's polls then cost the busy ones nothing).
            with self.engine.connect() as conn:
                busy = _run(conn, self._sql.any_unfinished).fetchone()
                conn.rollback()
            return ClaimResult("wait" if busy else "exit")
        with self._tx() as conn:
            return self._claim(conn, site, placeholder_id, free, limit, now, window, ahead=ahead, whole=whole)

    def _probe_ready(self) -> bool:
        with self.engine.connect() as conn:
            found = _run(conn, self._sql.any_ready).fetchone() is not None
            conn.rollback()
        return found

    def _claim(
        self,
        conn: Connection,
        site: str,
        placeholder_id: str,
        free: FreeResources,
        limit: int,
        now: float,
        window: int,
        *,
        ahead: int = 0,
        whole: FreeResources | None = None,
    ) -> ClaimResult:
        if free.nodes > 1:  # a placeholder of several nodes is one job's allocation: one job at a time
            limit = min(limit, 1)
        chosen: list[int] = []
        ready: list[Job] = []
        est = self.estimates(conn)
        world = self._world(conn, placeholder_id, now, est) if self.policy.needs_world else None
        sites = sorted({site, *(world.sites if world else ())})
        # A prefix-stable policy (FCFS, completion-time) decides on the oldest ready jobs as it
        # would on all of them: start small. The others rank every ready job: give them the window.
        # PostgreSQL locks every candidate read (FOR UPDATE SKIP LOCKED) until commit, and concurrent claims
        # must skip them all: read just enough there (the loop widens if they do not fit).
        first = max(1, limit + 2 * ahead) if self.is_postgres else max(8, 4 * (limit + ahead))
        size = first if self.policy.prefix_stable else min(window, RANKING_WINDOW)
        while True:
            # Most claims are served by the first few ready jobs: look further only when they do not fit.
            ready = self._ready_jobs(conn, site, sites, est, size)
            if not ready:
                break
            if any(j.attrs["licences"] for j in ready):
                free = replace(free, licences=self._licence_guard(conn, site))
            chosen = self.policy.select(ready, site, free, now, limit, world) if free.cpus > 0 else []
            if (
                free.cpus <= 0
                or len(chosen) >= limit
                or len(ready) < size
                or size >= window
                or not self.policy.prefix_stable
            ):
                break
            size = min(window, size * 8)
        if ahead > 0 and whole is not None and ready:
            chosen = chosen + self._ahead(ready, chosen, site, whole, free.licences, now, ahead, world)
        if not chosen:
            busy = _run(conn, self._sql.any_unfinished).fetchone()
            self._seen(conn, placeholder_id, now)
            return ClaimResult("wait" if busy else "exit")
        lease = now + self.lease_s
        params = {"site": site, "ph": placeholder_id, "lease": lease, "now": now, **ids_params(chosen)}
        by_id = {r[0]: r for r in _run(conn, self._sql.take(len(chosen)), params).fetchall()}
        if not self.is_postgres:  # (PostgreSQL: written by the take statement itself)
            self._events(conn, now, "claim", chosen, placeholder_id, site, "")
        self._seen(conn, placeholder_id, now)
        return ClaimResult(
            "job",
            [
                ClaimedJob(j, t[1], t[2], t[3], t[4], json_value(t[5]), t[6], t[7], t[8], lease, t[9], t[10])
                for j in chosen
                if (t := by_id.get(j)) is not None
            ],
        )

    def _ahead(
        self,
        ready: Sequence[Job],
        chosen: Sequence[int],
        site: str,
        whole: FreeResources,
        licences: Mapping[str, int],
        now: float,
        ahead: int,
        world: ClaimWorld | None,
    ) -> list[int]:
        """Up to ``ahead`` more jobs for a placeholder to run after ``chosen``, each in its ``whole`` size.

        The same policy chooses, one job at a time, among the ready jobs not yet chosen, with the
        remaining wall time shortened by the estimates of the jobs before it. Invariant (fairness
        to the other placeholders): at most half of the ready jobs seen and left unchosen are
        taken ahead, so a narrow level of a workflow is never hoarded by one placeholder.
        """
        taken = set(chosen)
        left = [j for j in ready if j.job_id not in taken]
        room = min(ahead, len(left) // 2)
        remaining = whole.remaining_s
        if remaining is not None:
            remaining -= sum(j.requested_time for j in ready if j.job_id in taken)
        # Jobs taken ahead hold their licences from now on (they count as running): charge them.
        lic = dict(licences)
        for job in ready:
            if job.job_id in taken:
                _charge(lic, job)
        out: list[int] = []
        while len(out) < room and left:
            if remaining is not None and remaining <= 0:
                break
            room_now = replace(whole, remaining_s=remaining, licences=lic)
            pick = self.policy.select(left, site, room_now, now, 1, world)
            if not pick:
                break
            out.append(pick[0])
            job = next(j for j in left if j.job_id == pick[0])
            left.remove(job)
            _charge(lic, job)
            if remaining is not None:
                remaining -= job.requested_time
        return out

    def estimates(self, conn: Connection | None = None) -> Estimates:
        """The run-time estimates per (kind, site): fixed, or learned from done jobs (cached ``learn_every_s``)."""
        if self._fixed_estimates and self._estimates is not None:
            return self._estimates
        clock = time.monotonic()
        if self._estimates is None or clock - self._learned_at >= self.learn_every_s:
            # Only the runs finished since the last look: the "done" events after the last one seen. On
            # PostgreSQL event ids are not in commit order (a sequence), so the last LEARN_SLACK_EVENTS are
            # looked at again; a run already learned is skipped by its job id.
            after = self._learned_event - (LEARN_SLACK_EVENTS if self.is_postgres else 0)
            sql = _LEARN_PG if self.is_postgres else _LEARN_SQLITE
            if conn is None:
                with self.engine.connect() as c:
                    rows = _raw(c, sql, (max(after, 0),))
                    c.rollback()
            else:
                rows = _raw(conn, sql, (max(after, 0),))
            new = []
            for event_id, job_id, name, command, site, start_at, end_at in rows:
                self._learned_event = max(self._learned_event, event_id)
                if job_id not in self._learned_ids:
                    self._learned_ids.add(job_id)
                    new.append((self._kind(name, command), site, end_at - start_at))
            if self._estimates is None:
                self._estimates = Estimates(new)
            elif new:  # a new object: the ready-job cache keys on it (no new runs: keep it, and the cache)
                self._estimates = self._estimates.extended(new)
            self._learned_at = clock
        return self._estimates

    def _ready_jobs(self, conn: Connection, site: str, sites: Sequence[str], est: Estimates, size: int) -> list[Job]:
        """The ``size`` oldest ready jobs (by id) as the claim policy sees them at ``site`` (see the module doc).

        Locked like the candidates of a claim (``FOR UPDATE SKIP LOCKED`` on PostgreSQL). Only the
        ids are read each time: a queued job's own columns never change, so its row is read once and
        its :class:`Job` reused while the asking site, the sites of the snapshot and the estimates
        are the same (policies never change their inputs, house rule zero). Jobs of a kind share one
        estimates table (read-only): policies memoise on it.
        """
        rows = self._ready_rows
        if len(rows) > 50_000:  # forget the rows of jobs long gone from the queue
            rows.clear()
            self._ready_made.clear()
        if self.is_postgres:
            # One round trip: the candidates are read whole (and locked); most of them are new to the cache
            # anyway, since each claim takes the oldest.
            fetched = _raw(conn, _READY_ROWS_PG, (size,))
            ids = [r[0] for r in fetched]
            new_rows = [r for r in fetched if r[0] not in rows]
        else:
            ids = [r[0] for r in _raw(conn, _READY_IDS_SQLITE, (size,))]
            new_rows = []
            for chunk in _chunks(sorted(jid for jid in ids if jid not in rows), 500):
                new_rows += _raw(conn, _ready_rows_sqlite(len(chunk)), chunk)
        for jid, submit_at, cpus, mem_mb, time_s, lic, name, command, deadline_at, user_class, params, *shp in new_rows:
            rows[jid] = (
                submit_at,
                cpus,
                mem_mb,
                time_s,
                _licences(lic),
                self._kind(name, command),
                deadline_at,
                user_class or "regular",
                _params(params),
                (shp[0] or 1, shp[1] or 1),
            )
        missing = {r[0] for r in new_rows}
        formulas = self._formula_map(conn)
        key = (site, tuple(sites), id(est), id(formulas))
        made = self._ready_made.get(key)
        if made is None or made[0] is not est or made[1] is not formulas:
            if len(self._ready_made) > 64:
                self._ready_made.clear()
            made = self._ready_made[key] = (est, formulas, {}, {})
        _, _, jobs, tables = made
        out = []
        for jid in ids:
            job = jobs.get(jid)
            if job is None or jid in missing:
                submit_at, cpus, mem_mb, time_s, lic, kind, deadline_at, user_class, params, (tasks, nodes) = rows[jid]
                table = tables.get(kind)
                if table is None:
                    table = tables[kind] = (
                        {s: e for s in sites if (e := est.estimate(kind, s)) is not None} if len(est) else {}
                    )
                if params and kind in formulas:  # the user's formula, where it can be evaluated
                    table = _with_formulas(table, formulas[kind], params, sites)
                # The user's --time is the limit; without one, the estimate here (the formula's, else
                # the learned one) feeds the "fits my remaining wall time" check.
                requested = time_s if time_s > 0 else table.get(site, 0.0)
                attrs = {"mem_mb": mem_mb, "licences": lic, "kind": kind, "estimates": table, "user_class": user_class}
                if deadline_at is not None:
                    attrs["deadline"] = deadline_at
                if params:
                    attrs["params"] = params
                if tasks > 1 or nodes > 1:  # a parallel job: its shape, for the fit check (policy.claim.fits)
                    attrs.update(tasks=tasks, nodes=nodes, cpus_per_task=cpus)
                job = jobs[jid] = Job(jid, submit_at, requested, requested, tasks * cpus, attrs=attrs)
            out.append(job)
        if len(jobs) > 4 * max(size, RANKING_WINDOW):  # forget jobs no longer among the ready ones
            keep = set(ids)
            for jid in [j for j in jobs if j not in keep]:
                del jobs[jid]
        return out

    def _formula_map(self, conn: Connection) -> dict[str, dict[str, ExpressionFormula]]:
        """The user's formulas by kind and site (``""``: every site), cached like the typical waits."""
        clock = time.monotonic()
        if self._formulas is None or clock - self._formulas_at >= min(self.learn_every_s, 5.0):
            out: dict[str, dict[str, ExpressionFormula]] = {}
            for kind, at, text in _raw(conn, "SELECT kind, site, expression FROM formulas"):
                try:
                    out.setdefault(kind, {})[at] = ExpressionFormula(text)
                except FormulaError:  # refused when set; a hand-edited row must not stop claims
                    continue
            # keep the same object while nothing changed: the ready-job cache is keyed on it
            if out != self._formulas:
                self._formulas = out
            self._formulas_at = clock
        assert self._formulas is not None
        return self._formulas

    def set_formula(self, kind: str, expression: str | None, site: str = "", now: float | None = None) -> None:
        """Set (or, with ``None``, remove) the run-time formula of ``kind`` at ``site`` (``""``: every site).

        The formula is checked here (:class:`~metasched.model.formula.ExpressionFormula`: arithmetic
        on the job's parameters only); an invalid one is refused with the reason.
        """
        now = time.time() if now is None else now
        if not kind.strip():
            raise StoreError("formula: the job kind must not be empty")
        if expression is not None:
            try:
                ExpressionFormula(expression)
            except FormulaError as exc:
                raise StoreError(str(exc)) from None
        with self._tx() as conn:
            where = (FORMULAS.c.kind == kind) & (FORMULAS.c.site == site)
            if expression is None:
                conn.execute(FORMULAS.delete().where(where))
            elif (
                conn.execute(update(FORMULAS).where(where).values(expression=expression, updated_at=now)).rowcount == 0
            ):
                conn.execute(insert(FORMULAS).values(kind=kind, site=site, expression=expression, updated_at=now))
            self._event(conn, now, "formula", detail=f"{kind}@{site or '*'}: {expression or 'unset'}")
        self._formulas = None  # this process sees it at once

    def formulas(self) -> list[dict[str, Any]]:
        """The user's formulas with how well they did on the finished jobs that carried parameters.

        Each: ``kind``, ``site`` (``""``: every site), ``expression``, ``runs`` (finished runs it
        could be evaluated on) and ``error`` (their mean relative error |formula - actual| / actual,
        ``None`` without runs), ``missing`` (runs lacking a parameter it names).
        """
        with self.engine.connect() as conn:
            rows = conn.execute(
                select(FORMULAS.c.kind, FORMULAS.c.site, FORMULAS.c.expression).order_by(
                    FORMULAS.c.kind, FORMULAS.c.site
                )
            ).all()
            done = conn.execute(
                select(JOBS.c.name, JOBS.c.command, JOBS.c.site, JOBS.c.start_at, JOBS.c.end_at, _PARAMS_TEXT).where(
                    JOBS.c.state == JobState.DONE, JOBS.c.start_at.is_not(None), JOBS.c.end_at.is_not(None)
                )
            ).all()
        by_kind: dict[str, list[tuple[str, float, dict[str, float]]]] = defaultdict(list)
        for r in done:
            run = r.end_at - r.start_at
            if run > 0:
                by_kind[job_kind(r.name, r.command)].append((r.site or "", run, _params(r.params_text)))
        out = []
        for kind, at, text in rows:
            f = ExpressionFormula(text)
            errs, missing = [], 0
            # a site's own formula is judged on that site's runs; a formula for every site on the
            # runs at sites without their own
            own = {s for k, s, _ in rows if k == kind and s}
            for run_site, run, params in by_kind.get(kind, []):
                if (at and run_site != at) or (not at and run_site in own):
                    continue
                try:
                    errs.append(abs(f(params) - run) / run)
                except FormulaError:
                    missing += 1
            out.append(
                {
                    "kind": kind,
                    "site": at,
                    "expression": text,
                    "runs": len(errs),
                    "error": sum(errs) / len(errs) if errs else None,
                    "missing": missing,
                }
            )
        return out

    def _world(self, conn: Connection, asker: str, now: float, est: Estimates) -> ClaimWorld:
        """Every active placeholder but ``asker``, as claim policies see them (:class:`ClaimWorld`).

        Running: idle, or busy until its jobs' ``start + estimate`` (learned, else the user's time).
        Queued: expected to start at ``submitted + median measured wait at its site``, or, once it
        has waited longer than that, after as long again as it has waited (so a site whose
        placeholders never start stops holding jobs back).
        """
        # One query (a placeholder with its running jobs, if any), on the driver's cursor: this runs
        # in every claim of a planning policy.
        rows = _raw(conn, _WORLD_SQL)
        if not rows:
            return ClaimWorld({})
        busy: dict[str, float] = {}
        phs: dict[str, tuple[str, str, float]] = {}
        for pid, ph_site, state, submitted_at, job_site, start_at, time_s, name, command in rows:
            phs[pid] = (ph_site, state, submitted_at)
            if time_s is None:  # no running job
                continue
            guess = est.estimate(self._kind(name, command), job_site) if job_site else None
            end = (start_at or now) + (guess if guess is not None else time_s)
            busy[pid] = max(busy.get(pid, end), end)
        waits = self._typical_waits(conn)
        idle: dict[str, int] = defaultdict(int)
        busy_until: dict[str, list[float]] = defaultdict(list)
        queued: dict[str, list[float]] = defaultdict(list)
        for pid, (ph_site, state, submitted_at) in phs.items():
            if pid == asker:
                continue
            if state == "running":
                if pid in busy:
                    busy_until[ph_site].append(busy[pid])
                else:
                    idle[ph_site] += 1
            else:
                typical = waits.get(ph_site, 0.0)
                queued[ph_site].append(max(submitted_at + typical, 2 * now - submitted_at))
        names = sorted({ph_site for ph_site, _, _ in phs.values()})
        return ClaimWorld(
            {n: SiteSlots(n, idle[n], tuple(sorted(busy_until[n])), tuple(sorted(queued[n]))) for n in names}
        )

    def _typical_waits(self, conn: Connection) -> dict[str, float]:
        """Median measured queue wait of each site's placeholders (cached like the estimates)."""
        clock = time.monotonic()
        if self._waits is None or clock - self._waits_at >= min(self.learn_every_s, 5.0):
            waits: dict[str, list[float]] = {}
            for site_name, wait in conn.execute(
                select(PLACEHOLDERS.c.site, PLACEHOLDERS.c.wait_s).where(PLACEHOLDERS.c.wait_s.is_not(None))
            ):
                waits.setdefault(site_name, []).append(wait)
            self._waits = {k: statistics.median(v) for k, v in waits.items()}
            self._waits_at = clock
        return self._waits

    def _kind(self, name: str | None, command: str) -> str:
        key = (name, command) if name is None else name
        kind = self._kinds.get(key)
        if kind is None:
            kind = self._kinds[key] = job_kind(name, command)
            if len(self._kinds) > 100_000:
                self._kinds.clear()
        return kind

    def _licence_guard(self, conn: Connection, site: str) -> dict[str, int]:
        """The licence copies a claim at ``site`` may hand out, locked until this transaction ends.

        The combination rule of site and global limits is :func:`~metasched.model.licence.free_copies`;
        copies are held by jobs in :data:`HOLDS_LICENCES` at any site. Why concurrent claims cannot
        overshoot: on SQLite every claim runs under ``BEGIN IMMEDIATE`` (one writer, so the counts
        cannot change before this claim commits). On PostgreSQL the claim first locks every global
        licence row (in name order, so two claims never wait on each other crosswise) and then the
        asking site's row, ``FOR UPDATE``; a second claim that may hand out a licence waits there
        until the first commits, and its count (a new statement, so at READ COMMITTED a new
        snapshot) then sees the jobs the first handed out. Claims whose candidates need no licence
        never come here and take no lock.
        """
        lock = " FOR UPDATE" if self.is_postgres else ""
        # On the driver's cursor (this runs in every claim that may hand out a licence).
        global_caps = {name: copies for name, copies in _raw(conn, _GLOBAL_LICENCES_SQL + lock)}
        rows = _raw(conn, (_SITE_LICENCES_PG if self.is_postgres else _SITE_LICENCES_SQLITE) + lock, (site,))
        site_caps = _licences(rows[0][0]) if rows else {}
        here: list[dict[str, int]] = []
        everywhere: list[dict[str, int]] = []
        for at, text in _raw(conn, _HELD_LICENCES_SQL):
            lic = _licences(text)
            if lic:
                everywhere.append(lic)
                if at == site:
                    here.append(lic)
        return free_copies(site_caps, global_caps, held(here), held(everywhere))

    def licence_usage(self) -> list[dict[str, Any]]:
        """Each licence's limits and use: ``name``, global ``copies`` (None: no global limit),
        ``held`` (copies held anywhere) and ``sites`` (``{site: [held, cap or None]}``)."""
        with self.engine.connect() as conn:
            global_caps = {n: c for n, c in conn.execute(select(LICENCES.c.name, LICENCES.c.copies))}
            site_caps = {n: dict(lic or {}) for n, lic in conn.execute(select(SITES.c.name, SITES.c.licences))}
            use: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
            for at, text in conn.execute(select(JOBS.c.site, _LICENCES_TEXT).where(JOBS.c.state.in_(HOLDS_LICENCES))):
                for name, count in _licences(text).items():
                    use[name][at or "?"] += int(count)
        names = sorted({*global_caps, *use, *(n for caps in site_caps.values() for n in caps)})
        out = []
        for name in names:
            per_site = {
                s: [use[name].get(s, 0), caps.get(name)]
                for s, caps in sorted(site_caps.items())
                if name in caps or use[name].get(s)
            }
            for s, n in use[name].items():
                per_site.setdefault(s, [n, None])
            out.append(
                {"name": name, "copies": global_caps.get(name), "held": sum(use[name].values()), "sites": per_site}
            )
        return out

    def set_licence(self, name: str, copies: int | None, now: float | None = None) -> None:
        """Set (``copies`` >= 0) or remove (``None``) the global limit of licence ``name``."""
        now = time.time() if now is None else now
        if not name or not name.strip():
            raise StoreError("licence name must not be empty")
        if copies is not None and copies < 0:
            raise StoreError(f"licence {name!r}: copies must be >= 0, got {copies}")
        with self._tx() as conn:
            if copies is None:
                conn.execute(LICENCES.delete().where(LICENCES.c.name == name))
            elif (
                conn.execute(
                    update(LICENCES).where(LICENCES.c.name == name).values(copies=copies, updated_at=now)
                ).rowcount
                == 0
            ):
                conn.execute(insert(LICENCES).values(name=name, copies=copies, updated_at=now))
            self._event(conn, now, "licence", detail=f"{name}={'unset' if copies is None else copies}")
            self._notify(conn)

    def licences(self) -> dict[str, int]:
        """The global licence limits: ``{name: copies}``."""
        with self.engine.connect() as conn:
            return {n: c for n, c in conn.execute(select(LICENCES.c.name, LICENCES.c.copies).order_by(LICENCES.c.name))}

    def _seen(self, conn: Connection, placeholder_id: str, now: float) -> None:
        # ``last_seen_at`` is for people (status, dashboard), not for leases: write it at most once a second
        # per placeholder, not on every claim.
        if now - self._seen_at.get(placeholder_id, -math.inf) < 1.0:
            return
        if len(self._seen_at) > 10_000:
            self._seen_at.clear()
        self._seen_at[placeholder_id] = now
        _run(conn, self._sql.seen, {"now": now, "ph": placeholder_id})

    # ------------------------------------------------------------------ heartbeat / complete / leases

    def heartbeat(
        self,
        placeholder_id: str,
        now: float | None = None,
        *,
        holding: Sequence[tuple[int, int]] | None = None,
        fenced: Sequence[tuple[int, int]] = (),
    ) -> dict[int, int]:
        """Renew the leases of the jobs ``placeholder_id`` holds; returns ``{job_id: attempt}`` it still holds.

        A job the placeholder runs but that is not in the answer was taken from it (lease lost,
        cancelled): the placeholder must kill it.

        ``holding`` (``(job_id, attempt)`` pairs: the jobs it runs, has prefetched or has finished and not
        yet reported) makes the renewal exact: only those are renewed. A job the metaqueue has leased to
        this placeholder but that it does not list is taken back at once, since the placeholder does not
        run it: with the attempt counted when it is in ``fenced`` (the placeholder started it and killed it
        itself, having lost contact for nearly a lease: a lost lease), else handed back uncounted (never
        started: a prefetched job it dropped, or a claim whose answer it never received). Without
        ``holding`` (older clients) every lease of the placeholder is renewed.

        Invariant: a job is renewed only for the placeholder and attempt that hold it, and a job taken
        back here is one the placeholder has just said it does not run.
        """
        now = time.time() if now is None else now
        with self._tx() as conn:
            if holding is None:
                held = _run(conn, self._sql.renew, {"lease": now + self.lease_s, "ph": placeholder_id}).fetchall()
                out = {r[0]: r[1] for r in held}
            else:
                out = self._renew_exactly(conn, placeholder_id, now, dict(holding), set(fenced))
            self._seen(conn, placeholder_id, now)
        return out

    def _renew_exactly(
        self, conn: Connection, placeholder_id: str, now: float, holding: dict[int, int], fenced: set[tuple[int, int]]
    ) -> dict[int, int]:
        q = select(*_LEASED).where(JOBS.c.placeholder_id == placeholder_id, JOBS.c.state == JobState.RUNNING)
        if self.is_postgres:
            q = q.with_for_update()
        kept, lost, unknown = [], [], []
        for r in conn.execute(q).all():
            if holding.get(r.id) == r.attempts:
                kept.append(r)
            elif (r.id, r.attempts) in fenced:
                lost.append(r)
            else:
                unknown.append({"job_id": r.id, "attempt": r.attempts})
        if kept:
            conn.execute(
                update(JOBS)
                .where(
                    JOBS.c.id.in_([r.id for r in kept]),
                    JOBS.c.placeholder_id == placeholder_id,
                    JOBS.c.state == JobState.RUNNING,
                )
                .values(lease_until=now + self.lease_s)
            )
        if lost:
            self._take_back(conn, lost, now, "fenced by placeholder {ph} (no contact for a lease)")
        if unknown:
            self._release(conn, placeholder_id, unknown, now, "not held by its placeholder (never started)")
        return {r.id: r.attempts for r in kept}

    def complete(
        self,
        job_id: int,
        placeholder_id: str,
        attempt: int,
        exit_code: int,
        *,
        start_at: float | None = None,
        end_at: float | None = None,
        stdout_path: str | None = None,
        stderr_path: str | None = None,
        now: float | None = None,
    ) -> bool:
        """Record the end of a run. Refused (returns False) unless this placeholder and attempt hold the job.

        Exit code 0: ``done``, and each dependent has one dependency fewer to wait for. Otherwise:
        ``failed`` and every (transitive) dependent is ``dep_failed``.
        """
        now = time.time() if now is None else now
        with self._tx() as conn:
            self._notify(conn)
            return self._complete(
                conn, job_id, placeholder_id, attempt, exit_code, start_at, end_at, stdout_path, stderr_path, now
            )

    def _complete(
        self,
        conn: Connection,
        job_id: int,
        placeholder_id: str,
        attempt: int,
        exit_code: int,
        start_at: float | None,
        end_at: float | None,
        stdout_path: str | None,
        stderr_path: str | None,
        now: float,
        count_run: bool = True,
    ) -> bool:
        state = JobState.DONE if exit_code == 0 else JobState.FAILED
        params: dict[str, Any] = {
            "state": str(state),
            "exit_code": exit_code,
            "end_at": end_at if end_at is not None else now,
            "start_at": start_at,
            "stdout_path": stdout_path,
            "stderr_path": stderr_path,
            "reason": "" if exit_code == 0 else f"exit code {exit_code}",
            "job_id": job_id,
            "ph": placeholder_id,
            "attempt": attempt,
        }
        if self.is_postgres:  # the finish, its event and the release of dependents in one statement
            params.update(
                now=now,
                kind="done" if exit_code == 0 else "failed",
                detail=f"exit {exit_code}",
                stale_detail=f"attempt {attempt} exit {exit_code}",
            )
            if _run(conn, self._sql.finish_all, params).fetchone() is None:
                return False
            if count_run:
                _run(conn, self._sql.ran, {"n": 1, "now": now, "ph": placeholder_id})
            if state != JobState.DONE:
                self._cascade_failure(conn, [job_id], now)
            else:
                self._cascade_done(conn, [job_id], now)
            return True
        res = _run(conn, self._sql.finish, params)
        ok = res.rowcount == 1
        _run(
            conn,
            self._sql.event,
            {
                "at": now,
                "kind": ("done" if exit_code == 0 else "failed") if ok else "stale_complete",
                "job_id": job_id,
                "placeholder_id": placeholder_id,
                "site": None,
                "detail": f"exit {exit_code}" if ok else f"attempt {attempt} exit {exit_code}",
            },
        )
        if not ok:
            return False
        if count_run:
            _run(conn, self._sql.ran, {"n": 1, "now": now, "ph": placeholder_id})
        if state == JobState.DONE:
            _run(conn, self._sql.release_deps, {"job_id": job_id})
            self._cascade_done(conn, [job_id], now)
        else:
            self._cascade_failure(conn, [job_id], now)
        return True

    def _complete_many_pg(
        self, conn: Connection, placeholder_id: str, results: Sequence[Mapping[str, Any]], now: float
    ) -> list[bool]:
        """PostgreSQL: :meth:`_complete` of every result (distinct jobs) in one round trip, the placeholder's
        run count included; then the failure cascade of the failed ones. Returns each one's acceptance."""
        ids = [int(r["job_id"]) for r in results]
        params = {
            "ids": ids,
            "attempts": [int(r["attempt"]) for r in results],
            "codes": [int(r["exit_code"]) for r in results],
            "starts": [_float_or_none(r.get("start_at")) for r in results],
            "ends": [_float_or_none(r.get("end_at")) for r in results],
            "outs": [r.get("stdout_path") for r in results],
            "errs": [r.get("stderr_path") for r in results],
            "now": now,
            "ph": placeholder_id,
        }
        finished = dict(_run(conn, self._sql.finish_many, params).fetchall())
        failed = [jid for jid, state in finished.items() if state != JobState.DONE]
        if failed:
            self._cascade_failure(conn, failed, now)
        if len(failed) < len(finished):
            self._cascade_done(conn, [jid for jid, state in finished.items() if state == JobState.DONE], now)
        return [jid in finished for jid in ids]

    def report(
        self,
        placeholder_id: str,
        results: Sequence[Mapping[str, Any]],
        *,
        claim_site: str | None = None,
        free: FreeResources | None = None,
        limit: int = 1,
        now: float | None = None,
        ahead: int = 0,
        whole: FreeResources | None = None,
        release: Sequence[Mapping[str, Any]] = (),
    ) -> tuple[list[bool], ClaimResult | None]:
        """Completions (dicts with the :meth:`complete` arguments), jobs handed back unstarted (``release``:
        dicts with ``job_id`` and ``attempt``, see :meth:`release`) and, if ``claim_site``, the next claim
        (with ``ahead``/``whole`` as in :meth:`claim`), in one transaction: one round trip and one commit
        per finished job (or batch of them) instead of two."""
        now = time.time() if now is None else now
        if self._watch is not None:
            self._watch_version = self._data_version()
        with self._tx() as conn:
            return self.report_in(
                conn, now, placeholder_id, results, claim_site, free, limit, ahead=ahead, whole=whole, release=release
            )

    def report_in(
        self,
        conn: Connection,
        now: float,
        placeholder_id: str,
        results: Sequence[Mapping[str, Any]],
        claim_site: str | None = None,
        free: FreeResources | None = None,
        limit: int = 1,
        *,
        ahead: int = 0,
        whole: FreeResources | None = None,
        release: Sequence[Mapping[str, Any]] = (),
    ) -> tuple[list[bool], ClaimResult | None]:
        """:meth:`report` inside the caller's transaction ``conn`` (see :meth:`run_batch`)."""
        if self.is_postgres and results and len({int(r["job_id"]) for r in results}) == len(results):
            accepted = self._complete_many_pg(conn, placeholder_id, results, now)
            results = ()  # (done)
        else:
            accepted = []
        accepted += [
            self._complete(
                conn,
                int(r["job_id"]),
                placeholder_id,
                int(r["attempt"]),
                int(r["exit_code"]),
                r.get("start_at"),
                r.get("end_at"),
                r.get("stdout_path"),
                r.get("stderr_path"),
                now,
                count_run=False,
            )
            for r in results
        ]
        if any(accepted):
            self._notify(conn)
            if results:  # (PostgreSQL's batch statement counted its runs itself)
                _run(conn, self._sql.ran, {"n": sum(accepted), "now": now, "ph": placeholder_id})
            self._seen_at[placeholder_id] = now
        if release:
            self._release(conn, placeholder_id, release, now)
        claimed = None
        if claim_site is not None and free is not None:
            claimed = self._claim(conn, claim_site, placeholder_id, free, limit, now, 2048, ahead=ahead, whole=whole)
        return accepted, claimed

    def claim_in(
        self,
        conn: Connection,
        now: float,
        site: str,
        placeholder_id: str,
        free: FreeResources,
        limit: int = 1,
        *,
        ahead: int = 0,
        whole: FreeResources | None = None,
    ) -> ClaimResult:
        """:meth:`claim` inside the caller's transaction ``conn`` (see :meth:`run_batch`)."""
        return self._claim(conn, site, placeholder_id, free, limit, now, 2048, ahead=ahead, whole=whole)

    def run_batch(self, calls: Sequence[Callable[[Connection, float], Any]]) -> list[Any]:
        """Run several protocol calls (:meth:`claim_in`, :meth:`report_in` bound with their arguments) in ONE
        transaction, in order: the server's group commit. Returns each call's result, or the exception it
        raised.

        Invariant: each call sees the effects of the calls before it (one writer: SQLite's lock, or
        row locks on PostgreSQL), so two claims of one batch never get the same job; the batch commits
        or rolls back whole. If anything fails, every call is run again alone in its own transaction
        (so one bad request cannot fail the others, and none is applied twice: the failed batch left no
        trace).
        """
        if not calls:
            return []
        try:
            with self._tx() as conn:
                now = time.time()
                return [call(conn, now) for call in calls]
        except Exception:
            if len(calls) == 1:
                raise
        out: list[Any] = []
        for call in calls:
            try:
                with self._tx() as conn:
                    out.append(call(conn, time.time()))
            except Exception as exc:
                out.append(exc)
        return out

    def release(self, placeholder_id: str, jobs: Sequence[Mapping[str, Any]], now: float | None = None) -> list[int]:
        """Hand back jobs a placeholder claimed ahead but will not start (``job_id`` + ``attempt`` each).

        They go back to the queue as if never claimed (the attempt is not counted). Only jobs this
        placeholder holds in that attempt are touched; returns the ids put back.
        """
        now = time.time() if now is None else now
        with self._tx() as conn:
            return self._release(conn, placeholder_id, jobs, now)

    def _release(
        self,
        conn: Connection,
        placeholder_id: str,
        jobs: Sequence[Mapping[str, Any]],
        now: float,
        why: str = "handed back unstarted",
    ) -> list[int]:
        back: list[int] = []
        for r in jobs:
            job_id = int(r["job_id"])
            params = {"job_id": job_id, "attempt": int(r["attempt"]), "ph": placeholder_id}
            if _run(conn, self._sql.give_back, params).rowcount == 1:
                back.append(job_id)
        if back:
            self._events(conn, now, "released", back, placeholder_id, None, why)
            self._notify(conn)
        return back

    def _cascade_done(self, conn: Connection, done: Sequence[int], now: float) -> None:
        """The ``afternotok`` dependents of jobs that just succeeded never run (one indexed probe when none)."""
        hit = [
            a
            for (a,) in conn.execute(
                select(DEPS.c.after_id).distinct().where(DEPS.c.after_id.in_(list(done)), DEPS.c.kind == "notok")
            )
        ]
        if hit:
            self._cascade_failure(conn, hit, now, done=True)

    def _cascade_failure(self, conn: Connection, roots: Sequence[int], now: float, *, done: bool = False) -> None:
        """The dependents of ``roots``, which just ended (failed, cancelled or, with ``done``, succeeded),
        by dependency kind: one that can never be met makes the queued dependent ``dep_failed`` (and so on
        down, the reason naming the root); an ``any`` / ``notok`` one met by a failure counts as done
        (``pending_deps`` - 1). The release of the ``ok`` / ``any`` dependents of a DONE job is the
        completion statements' (``statements.py``)."""
        info = {
            jid: (name or str(jid), st)
            for jid, name, st in conn.execute(select(JOBS.c.id, JOBS.c.name, JOBS.c.state).where(JOBS.c.id.in_(roots)))
        }
        todo = deque((r, *info.get(r, (str(r), JobState.FAILED))) for r in roots)
        seen = set(roots)
        while todo:
            jid, root, root_state = todo.popleft()
            st = JobState.DONE if done and jid in info else (root_state if jid in info else JobState.DEP_FAILED)
            kids = [(d, k) for d, k in conn.execute(select(DEPS.c.job_id, DEPS.c.kind).where(DEPS.c.after_id == jid))]
            if done and jid in info:
                kids = [(d, k) for d, k in kids if k == "notok"]
            broken = [d for d, k in kids if d not in seen and dep_violated(k, st)]
            met = [d for d, k in kids if k != "ok" and dep_satisfied(k, st)]
            if met:
                conn.execute(
                    update(JOBS)
                    .where(JOBS.c.id.in_(met), JOBS.c.state == JobState.QUEUED)
                    .values(pending_deps=JOBS.c.pending_deps - 1)
                )
            if not broken:
                continue
            kind = "notok" if done else "ok"
            why = _never_reason(root, kind, root_state)
            res = conn.execute(
                update(JOBS)
                .where(JOBS.c.id.in_(broken), JOBS.c.state == JobState.QUEUED)
                .values(state=JobState.DEP_FAILED, reason=why)
                .returning(JOBS.c.id)
            )
            hit = [r for (r,) in res]
            if hit:
                conn.execute(
                    insert(EVENTS), [{"at": now, "kind": "dep_failed", "job_id": h, "detail": why} for h in hit]
                )
            for h in hit:
                seen.add(h)
                todo.append((h, root, root_state))

    def expire_leases(self, now: float | None = None) -> list[int]:
        """Take back running jobs whose lease ended: requeued (attempt counted) or, past the retry limit, failed."""
        now = time.time() if now is None else now
        with self._tx() as conn:
            q = select(*_LEASED).where(JOBS.c.state == JobState.RUNNING, JOBS.c.lease_until < now)
            if self.is_postgres:
                q = q.with_for_update(skip_locked=True)
            lost = conn.execute(q).all()
            self._take_back(conn, lost, now, "lease lost by placeholder {ph}")
        return [r.id for r in lost]

    def _take_back(self, conn: Connection, lost: Sequence[Any], now: float, why: str) -> None:
        """Lost leases (rows with id, attempts, max_attempts, placeholder_id): each job is requeued with its
        attempt counted or, at its retry limit, failed (and its dependents marked)."""
        if lost:
            self._notify(conn)
        failed = []
        for r in lost:
            gave_up = r.attempts >= r.max_attempts
            conn.execute(
                update(JOBS)
                .where(JOBS.c.id == r.id, JOBS.c.state == JobState.RUNNING, JOBS.c.attempts == r.attempts)
                .values(
                    state=JobState.FAILED if gave_up else JobState.QUEUED,
                    placeholder_id=None if not gave_up else r.placeholder_id,
                    lease_until=None,
                    reason=(
                        f"lease lost {r.attempts} times (retry limit)" if gave_up else why.format(ph=r.placeholder_id)
                    ),
                )
            )
            self._event(
                conn,
                now,
                "lease_lost",
                job_id=r.id,
                placeholder_id=r.placeholder_id,
                detail="failed: retry limit" if gave_up else "requeued",
            )
            if gave_up:
                failed.append(r.id)
        if failed:
            self._cascade_failure(conn, failed, now)

    def grant_grace(self, now: float | None = None) -> int:
        """Extend every running job's lease to at least ``now + lease_s``; returns how many were extended.

        For a metaqueue server that (re)starts: while it was down no placeholder could renew a lease, so
        leases that ended meanwhile say nothing about the placeholders. With the grace, each placeholder
        has one lease to get back in touch and say exactly what it holds (see :meth:`heartbeat`): its
        running jobs keep their leases, the jobs it killed itself count one lost attempt, the prefetched
        ones it dropped go back uncounted. A placeholder that is gone loses its jobs when the grace ends.

        Safe: extending a lease only delays handing its job to someone else; a placeholder stops its
        job by its own deadline (from its last acknowledged heartbeat), which no extension moves.
        """
        now = time.time() if now is None else now
        with self._tx() as conn:
            res = conn.execute(
                update(JOBS)
                .where(JOBS.c.state == JobState.RUNNING, JOBS.c.lease_until < now + self.lease_s)
                .values(lease_until=now + self.lease_s)
            )
            return int(res.rowcount or 0)

    # ------------------------------------------------------------------ user actions

    def _refs(self, conn: Connection, refs: Sequence[str], owner: str = ADMIN, see_all: bool = True) -> list[int]:
        known = self.resolve(conn, refs, owner, see_all)
        unknown = [r for r in refs if r not in known]
        if unknown:
            raise NotFound(f"unknown job(s): {', '.join(unknown)}")
        return list(dict.fromkeys(known[r] for r in refs))

    def cancel(
        self, refs: Sequence[str], now: float | None = None, *, owner: str = ADMIN, see_all: bool = True
    ) -> list[int]:
        """Cancel queued or running jobs (their dependents become ``dep_failed``); returns those cancelled.
        ``owner``'s names; ids of any job when ``see_all``, else of ``owner``'s only (:class:`NotFound`)."""
        now = time.time() if now is None else now
        with self._tx() as conn:
            ids = self._refs(conn, refs, owner, see_all)
            res = conn.execute(
                update(JOBS)
                .where(JOBS.c.id.in_(ids), JOBS.c.state.in_([JobState.QUEUED, JobState.RUNNING]))
                .values(state=JobState.CANCELLED, reason="cancelled by user", end_at=now, lease_until=None)
                .returning(JOBS.c.id)
            )
            done = [r for (r,) in res]
            for j in done:
                self._event(conn, now, "cancel", job_id=j)
            self._cascade_failure(conn, done, now)
            self._notify(conn)
        return done

    def retry(
        self, refs: Sequence[str], now: float | None = None, *, owner: str = ADMIN, see_all: bool = True
    ) -> list[int]:
        """Queue failed / cancelled / dependency-failed jobs again, and the dependents they held back
        (references as :meth:`cancel`)."""
        now = time.time() if now is None else now
        with self._tx() as conn:
            ids = self._refs(conn, refs, owner, see_all)
            rows = conn.execute(select(JOBS.c.id, JOBS.c.name, JOBS.c.state).where(JOBS.c.id.in_(ids))).all()
            bad = [f"{r.name or r.id} ({r.state})" for r in rows if r.state not in BROKEN]
            if bad:
                raise StoreError(f"only failed, cancelled or dependency-failed jobs can be retried: {', '.join(bad)}")
            requeued: list[int] = []
            todo = deque(ids)
            seen: set[int] = set()
            while todo:
                jid = todo.popleft()
                if jid in seen:
                    continue
                seen.add(jid)
                deps = conn.execute(
                    select(JOBS.c.id, JOBS.c.name, JOBS.c.state, DEPS.c.kind)
                    .join(DEPS, DEPS.c.after_id == JOBS.c.id)
                    .where(DEPS.c.job_id == jid)
                ).all()
                broken = [d for d in deps if dep_violated(d.kind, d.state) and d.id not in seen]
                if broken:
                    if jid in ids:
                        label = next((r.name for r in rows if r.id == jid and r.name), jid)
                        raise StoreError(
                            f"job {label} depends on {', '.join(str(d.name or d.id) for d in broken)} "
                            "which did not succeed: retry that first (or together)"
                        )
                    continue
                pending = sum(1 for d in deps if not dep_satisfied(d.kind, d.state))
                conn.execute(
                    update(JOBS)
                    .where(JOBS.c.id == jid)
                    .values(
                        state=JobState.QUEUED,
                        pending_deps=pending,
                        attempts=0,
                        exit_code=None,
                        reason="",
                        placeholder_id=None,
                        site=None,
                        start_at=None,
                        end_at=None,
                        lease_until=None,
                    )
                )
                self._event(conn, now, "retry", job_id=jid)
                self._notify(conn)
                requeued.append(jid)
                for (child,) in conn.execute(
                    select(JOBS.c.id)
                    .join(DEPS, DEPS.c.job_id == JOBS.c.id)
                    .where(DEPS.c.after_id == jid, JOBS.c.state == JobState.DEP_FAILED)
                ):
                    todo.append(child)
            # A requeued job may have been counted before a sibling dependency was requeued: recount.
            for jid in requeued:
                pending = sum(
                    1
                    for kind, st in conn.execute(
                        select(DEPS.c.kind, JOBS.c.state)
                        .select_from(DEPS.join(JOBS, DEPS.c.after_id == JOBS.c.id))
                        .where(DEPS.c.job_id == jid)
                    )
                    if not dep_satisfied(kind, st)
                )
                conn.execute(update(JOBS).where(JOBS.c.id == jid).values(pending_deps=pending))
        return requeued

    # ------------------------------------------------------------------ queries

    def jobs(
        self,
        *,
        states: Sequence[str] = (),
        site: str | None = None,
        name_like: str | None = None,
        limit: int = 0,
        owners: Sequence[str] = (),
        ids: Sequence[int] = (),
        columns: Sequence[str] = (),
    ) -> list[dict[str, Any]]:
        """Jobs in id order, filtered (``owners``: only theirs; empty: everyone's); ``columns``: only these."""
        q = (select(*(JOBS.c[c] for c in columns)) if columns else select(JOBS)).order_by(JOBS.c.id)
        if owners:
            q = q.where(JOBS.c.owner.in_(list(owners)))
        if ids:
            q = q.where(JOBS.c.id.in_(list(ids)))
        if states:
            q = q.where(JOBS.c.state.in_(list(states)))
        if site:
            q = q.where(JOBS.c.site == site)
        if name_like:
            q = q.where(JOBS.c.name.like(name_like.replace("*", "%")))
        if limit:
            q = q.limit(limit)
        with self.engine.connect() as conn:
            result = conn.execute(q)
            keys = list(result.keys())
            return [dict(zip(keys, r, strict=True)) for r in result]

    def job(self, ref: str, *, owner: str = ADMIN, see_all: bool = True) -> dict[str, Any]:
        """One job by name or id (as :meth:`cancel`), with ``after`` (its dependencies' ids)."""
        with self.engine.connect() as conn:
            (jid,) = self._refs(conn, [ref], owner, see_all)
            row = conn.execute(select(JOBS).where(JOBS.c.id == jid)).one()
            after = [r for (r,) in conn.execute(select(DEPS.c.after_id).where(DEPS.c.job_id == jid))]
        out = dict(row._mapping)
        out["after"] = after
        return out

    def dependencies(self) -> dict[int, list[int]]:
        """Every job's dependencies: ``{job_id: [after_id, ...]}`` (jobs without any are absent)."""
        out: dict[int, list[int]] = {}
        with self.engine.connect() as conn:
            for jid, after in conn.execute(select(DEPS.c.job_id, DEPS.c.after_id)):
                out.setdefault(jid, []).append(after)
        return out

    def counts(self) -> dict[str, int]:
        """Number of jobs per state, plus ``ready`` (queued with every dependency done)."""
        with self.engine.connect() as conn:
            out = {st: n for st, n in conn.execute(select(JOBS.c.state, func.count()).group_by(JOBS.c.state))}
            out["ready"] = conn.execute(
                select(func.count()).where(JOBS.c.state == JobState.QUEUED, JOBS.c.pending_deps == 0)
            ).scalar_one()
        return out

    def holders_and_ready(
        self, placeholder_ids: Sequence[str], rows_per_idle: int
    ) -> tuple[set[str], int, list[tuple[int, float, int]]]:
        """For the site manager's idle capacity, in one read: which of ``placeholder_ids`` hold a running job,
        the number of ready jobs, and the oldest ready jobs' ``(cpus x tasks, time_s, mem_mb)`` (at most
        ``rows_per_idle`` per placeholder holding none; no rows when none is idle or nothing is ready)."""
        ready_now = (JOBS.c.state == JobState.QUEUED) & (JOBS.c.pending_deps == 0)
        with self.engine.connect() as conn:
            holding = set(
                conn.execute(
                    select(JOBS.c.placeholder_id)
                    .where(JOBS.c.placeholder_id.in_(list(placeholder_ids)), JOBS.c.state == JobState.RUNNING)
                    .distinct()
                ).scalars()
            )
            ready = int(conn.execute(select(func.count()).where(ready_now)).scalar_one())
            n_idle = len(set(placeholder_ids) - holding)
            if not n_idle or not ready:
                return holding, ready, []
            rows = conn.execute(
                select(JOBS.c.cpus * JOBS.c.tasks, JOBS.c.time_s, JOBS.c.mem_mb)
                .where(ready_now)
                .order_by(JOBS.c.id)
                .limit(rows_per_idle * n_idle)
            ).all()
        return holding, ready, [(int(c), float(t or 0.0), int(m or 0)) for c, t, m in rows]

    def events(self, job_id: int | None = None, since_id: int = 0) -> list[dict[str, Any]]:
        q = select(EVENTS).where(EVENTS.c.id > since_id).order_by(EVENTS.c.id)
        if job_id is not None:
            q = q.where(EVENTS.c.job_id == job_id)
        with self.engine.connect() as conn:
            return [dict(r._mapping) for r in conn.execute(q)]

    # ------------------------------------------------------------------ users

    def add_user(self, name: str, role: str = "user", now: float | None = None) -> str:
        """Create user ``name`` and return their new token (only its SHA-256 is stored: shown once)."""
        if not USER_NAME.match(name):
            raise StoreError(
                f"bad user name {name!r}: a letter, then letters, digits, '.', '_' or '-' (at most 100 characters)"
            )
        if name == ADMIN:
            raise StoreError(f"{ADMIN!r} is the server token's identity: choose another name")
        if role not in ROLES:
            raise StoreError(f"bad role {role!r}: one of {', '.join(ROLES)}")
        token = secrets.token_urlsafe(32)
        with self._tx() as conn:
            if conn.execute(select(USERS.c.name).where(USERS.c.name == name)).first():
                raise StoreError(f"user {name!r} exists already (remove it first to issue a new token)")
            conn.execute(
                insert(USERS),
                [
                    {
                        "name": name,
                        "token_hash": token_hash(token),
                        "role": role,
                        "created_at": time.time() if now is None else now,
                    }
                ],
            )
        return token

    def remove_user(self, name: str) -> None:
        """Remove user ``name``: their token stops working at once; their jobs stay (an admin sees them)."""
        with self._tx() as conn:
            if not conn.execute(USERS.delete().where(USERS.c.name == name)).rowcount:
                raise NotFound(f"unknown user {name!r}")

    def users(self) -> list[dict[str, Any]]:
        """Every user with their role, creation time and number of jobs per state (no token, no hash)."""
        with self.engine.connect() as conn:
            rows = [
                dict(r._mapping)
                for r in conn.execute(select(USERS.c.name, USERS.c.role, USERS.c.created_at).order_by(USERS.c.name))
            ]
            counts: dict[str, dict[str, int]] = defaultdict(dict)
            for owner, st, n in conn.execute(
                select(JOBS.c.owner, JOBS.c.state, func.count()).group_by(JOBS.c.owner, JOBS.c.state)
            ):
                counts[owner][st] = n
        for r in rows:
            r["jobs"] = counts.get(r["name"], {})
        return rows

    def user_for_token(self, token: str) -> tuple[str, str] | None:
        """``(name, role)`` of the user holding ``token``, or None."""
        with self.engine.connect() as conn:
            row = conn.execute(
                select(USERS.c.name, USERS.c.role).where(USERS.c.token_hash == token_hash(token))
            ).first()
        return None if row is None else (row.name, row.role)

    # ------------------------------------------------------------------ sites and placeholders

    def upsert_site(
        self, name: str, adapter: str, config: Mapping[str, Any], licences: Mapping[str, int], now: float | None = None
    ) -> None:
        now = time.time() if now is None else now
        values = {
            "adapter": adapter,
            "config": json.loads(json.dumps(dict(config))),
            "licences": dict(licences),
            "updated_at": now,
        }
        with self._tx() as conn:
            if conn.execute(update(SITES).where(SITES.c.name == name).values(**values)).rowcount == 0:
                conn.execute(insert(SITES).values(name=name, target=1, **values))

    def set_site_target(self, name: str, target: int, now: float | None = None) -> None:
        now = time.time() if now is None else now
        with self._tx() as conn:
            conn.execute(update(SITES).where(SITES.c.name == name).values(target=target))
            self._event(conn, now, "site_target", site=name, detail=str(target))

    def sites(self) -> list[dict[str, Any]]:
        with self.engine.connect() as conn:
            return [dict(r._mapping) for r in conn.execute(select(SITES).order_by(SITES.c.name))]

    def add_placeholder(self, placeholder_id: str, site: str, batch_id: str | None, now: float | None = None) -> None:
        now = time.time() if now is None else now
        with self._tx() as conn:
            conn.execute(
                insert(PLACEHOLDERS).values(
                    id=placeholder_id, site=site, batch_id=batch_id, state="submitted", submitted_at=now, jobs_run=0
                )
            )
            self._event(
                conn, now, "placeholder_submitted", placeholder_id=placeholder_id, site=site, detail=batch_id or ""
            )

    def placeholder_started(self, placeholder_id: str, site: str, host: str, now: float | None = None) -> float | None:
        """A placeholder says hello when it starts; returns its queue wait (s) if we submitted it."""
        now = time.time() if now is None else now
        with self._tx() as conn:
            row = conn.execute(select(PLACEHOLDERS.c.submitted_at).where(PLACEHOLDERS.c.id == placeholder_id)).first()
            if row is None:
                conn.execute(
                    insert(PLACEHOLDERS).values(
                        id=placeholder_id,
                        site=site,
                        state="running",
                        submitted_at=now,
                        started_at=now,
                        last_seen_at=now,
                        host=host,
                        jobs_run=0,
                    )
                )
                wait = None
            else:
                wait = max(0.0, now - row.submitted_at)
                conn.execute(
                    update(PLACEHOLDERS)
                    .where(PLACEHOLDERS.c.id == placeholder_id)
                    .values(state="running", started_at=now, last_seen_at=now, host=host, wait_s=wait)
                )
            self._event(
                conn,
                now,
                "placeholder_started",
                placeholder_id=placeholder_id,
                site=site,
                detail=f"wait {wait}" if wait is not None else "",
            )
        return wait

    def update_placeholder(self, placeholder_id: str, now: float | None = None, **values: Any) -> None:
        now = time.time() if now is None else now
        with self._tx() as conn:
            conn.execute(update(PLACEHOLDERS).where(PLACEHOLDERS.c.id == placeholder_id).values(**values))
            if "state" in values:
                self._event(
                    conn,
                    now,
                    f"placeholder_{values['state']}",
                    placeholder_id=placeholder_id,
                    detail=str(values.get("decision") or ""),
                )

    def placeholders(self, site: str | None = None, active_only: bool = False) -> list[dict[str, Any]]:
        q = select(PLACEHOLDERS).order_by(PLACEHOLDERS.c.submitted_at)
        if site:
            q = q.where(PLACEHOLDERS.c.site == site)
        if active_only:
            q = q.where(
                or_(
                    PLACEHOLDERS.c.state == "submitted",
                    PLACEHOLDERS.c.state == "queued",
                    PLACEHOLDERS.c.state == "running",
                )
            )
        with self.engine.connect() as conn:
            return [dict(r._mapping) for r in conn.execute(q)]


_LICENCES_TEXT = type_coerce(JOBS.c.licences, Text).label("licences_text")
_PARAMS_TEXT = type_coerce(JOBS.c.params, Text).label("params_text")
# The runs to learn from (Store.estimates): jobs done, by their "done" events after a given event id.
_LEARN = (
    "SELECT e.id, j.id, j.name, j.command, j.site, j.start_at, j.end_at FROM events e JOIN jobs j ON j.id = e.job_id "
    "WHERE e.id > {p} AND e.kind = 'done' AND j.state = 'done' AND j.site IS NOT NULL AND j.start_at IS NOT NULL "
    "AND j.end_at IS NOT NULL ORDER BY e.id"
)
_LEARN_SQLITE = _LEARN.format(p="?")
_LEARN_PG = _LEARN.format(p="%s")
#: On PostgreSQL, how many events before the last one seen are read again when learning (ids are allocated
#: at insert, not at commit: a completion committed late may carry an id below one already seen).
LEARN_SLACK_EVENTS = 5000
# The ready jobs' ids, oldest first (the index ix_jobs_ready covers the query; PostgreSQL reads the rows
# whole and locks them as a claim's candidates: _READY_ROWS_PG). Written for the driver: run in every claim.
_READY_IDS_SQLITE = "SELECT id FROM jobs WHERE state = 'queued' AND pending_deps = 0 ORDER BY id LIMIT ?"
# The licence guard's reads: global limits (in name order: the lock order), the asking site's own, and
# the licences held by jobs handed out and not finished.
_GLOBAL_LICENCES_SQL = "SELECT name, copies FROM licences ORDER BY name"
_SITE_LICENCES_SQLITE = "SELECT licences FROM sites WHERE name = ?"
_SITE_LICENCES_PG = "SELECT licences FROM sites WHERE name = %s"
_HELD_LICENCES_SQL = "SELECT site, licences FROM jobs WHERE state IN ({})".format(
    ", ".join(f"'{state}'" for state in HOLDS_LICENCES)
)
_WORLD_SQL = (
    "SELECT p.id, p.site, p.state, p.submitted_at, j.site, j.start_at, j.time_s, j.name, j.command"
    " FROM placeholders p LEFT JOIN jobs j ON j.placeholder_id = p.id AND j.state = 'running'"
    " WHERE p.state IN ('submitted', 'queued', 'running')"
)


def _never_reason(ref: object, kind: str, state: str) -> str:
    """Why a dependent never runs: its dependency ``ref`` (in ``state``) can no longer meet ``kind``."""
    if kind == "notok":
        return f"dependency {ref} succeeded (afternotok)"
    if state == JobState.CANCELLED:
        return f"dependency {ref} was cancelled"
    if state == JobState.DEP_FAILED:
        return f"dependency {ref} never ran"
    return f"dependency {ref} failed"


def token_hash(token: str) -> str:
    """What is stored of a user's token. A plain SHA-256 suffices: tokens are 256 random bits, not passwords."""
    return hashlib.sha256(token.encode()).hexdigest()


def _raw(conn: Connection, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
    """Rows of ``sql`` run on the driver's own connection, inside ``conn``'s transaction (plain tuples)."""
    return list(conn.connection.driver_connection.execute(sql, params).fetchall())  # type: ignore[union-attr]


# What the claim policy sees of a ready job (the ready-job cache of Store._ready_jobs); JSON columns as text.
_READY_COLUMNS = (
    "id, submit_at, cpus, mem_mb, time_s, {lic}, name, command, deadline_at, user_class, {params}, tasks, nodes"
)
_READY_ROWS_PG = (
    f"SELECT {_READY_COLUMNS.format(lic='licences::text', params='params::text')} FROM jobs "
    "WHERE state = 'queued' AND pending_deps = 0 ORDER BY id LIMIT %s FOR UPDATE SKIP LOCKED"
)


@functools.lru_cache(maxsize=64)
def _ready_rows_sqlite(n: int) -> str:
    return (
        f"SELECT {_READY_COLUMNS.format(lic='licences', params='params')} FROM jobs WHERE id IN ({', '.join('?' * n)})"
    )


def _with_formulas(
    table: Mapping[str, float],
    formulas: Mapping[str, ExpressionFormula],
    params: Mapping[str, float],
    sites: Sequence[str],
) -> dict[str, float]:
    """``table`` (learned estimates by site) with the user's formula where it applies and gives a positive value.

    At each site the site's own formula is preferred, else the kind's formula for every site
    (``""``); a formula that needs a parameter the job lacks, or gives a value <= 0, is skipped
    (the learned estimate stays).
    """
    out = dict(table)
    for s in sites:
        f = formulas.get(s) or formulas.get("")
        if f is None:
            continue
        try:
            value = f(params)
        except FormulaError:
            continue
        if value > 0:
            out[s] = value
    return out


def _params(text: Any) -> dict[str, float]:
    if not text or text in ("null", "{}"):
        return {}
    value = json.loads(text) if isinstance(text, str) else text
    return {str(k): float(v) for k, v in value.items()} if isinstance(value, dict) else {}


def _licences(text: Any) -> dict[str, int]:
    # Read as text: most jobs need no licence, and decoding "{}" thousands of times is wasted work.
    # (psycopg decodes json columns itself, so a dict may arrive here.)
    if not text or text == "{}":
        return {}
    value = json.loads(text) if isinstance(text, str) else text
    return dict(value) if isinstance(value, dict) else {}


def _float_or_none(value: Any) -> float | None:
    return None if value is None else float(value)


def _run(conn: Connection, sql: str, params: Any = None) -> Any:
    """Run one hot-path statement (:mod:`.statements`) on the DB-API cursor of ``conn``'s transaction.

    The raw cursor skips SQLAlchemy's per-execution result set-up (building the result metadata was the
    largest cost left once statements were pre-built); the transaction is still ``conn``'s."""
    cur = conn.connection.cursor()
    if isinstance(params, list):
        cur.executemany(sql, params)
    else:
        cur.execute(sql, params if params is not None else {})
    return cur


def _charge(licences: dict[str, int], job: Job) -> None:
    for name, count in (job.attrs.get("licences") or {}).items():
        licences[name] = licences.get(name, 0) - count


def _chunks(items: Sequence[Any], n: int) -> Iterator[Sequence[Any]]:
    for i in range(0, len(items), n):
        yield items[i : i + n]


def _topological(specs: Sequence[JobSpec], batch: Mapping[str, int]) -> list[int]:
    """Indices of ``specs`` in a dependency order (stable); raises naming a cycle if there is one."""
    indeg = [0] * len(specs)
    children: dict[int, list[int]] = defaultdict(list)
    for i, spec in enumerate(specs):
        for ref in dict.fromkeys(spec.after):
            if ref in batch:
                if batch[ref] == i:
                    raise StoreError(f"dependency cycle: {ref} -> {ref}")
                indeg[i] += 1
                children[batch[ref]].append(i)
    todo = deque(i for i in range(len(specs)) if indeg[i] == 0)
    order: list[int] = []
    while todo:
        i = todo.popleft()
        order.append(i)
        for c in children[i]:
            indeg[c] -= 1
            if indeg[c] == 0:
                todo.append(c)
    if len(order) == len(specs):
        return order
    # Walk back along unfinished dependencies from any stuck job until a job repeats: that is a cycle.
    stuck = {i for i in range(len(specs)) if indeg[i] > 0}
    path: list[int] = []
    at = min(stuck)
    while at not in path:
        path.append(at)
        at = next(batch[r] for r in specs[at].after if r in batch and batch[r] in stuck)
    cycle = [*path[path.index(at) :], at]
    raise StoreError(
        "dependency cycle (each must run before the next): " + " -> ".join(str(specs[i].name) for i in reversed(cycle))
    )
