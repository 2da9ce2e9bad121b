"""The metaqueue's tables, as SQLAlchemy Core :class:`~sqlalchemy.Table` objects on :data:`metadata`.

The schema is created by the Alembic migrations next to this file (``migrations/``), never by
``create_all``: change a table here, add a migration (``tests/runtime/test_models.py`` fails while the two
disagree). Core, not ORM classes: the store only ever used the tables, and importing ``sqlalchemy.orm`` and
building declarative classes was a fifth of every command's start-up (issue 34).

Times are Unix epoch seconds (floats); durations end in ``_s``.
"""

from __future__ import annotations

from sqlalchemy import (
    JSON,
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
)

metadata = MetaData()

#: One job of the metaqueue: the user's command line, its resources and its life.
#:
#: ``pending_deps`` counts the dependencies not yet ``done``; a job is ready when it is ``queued`` and
#: ``pending_deps == 0`` (kept up to date in the same transaction that finishes a dependency, so claiming never
#: joins the dependency table). ``attempts`` counts claims; ``lease_until`` is when the running placeholder's
#: lease ends unless renewed by a heartbeat. ``owner``: the user who submitted it (migration 0005; ``admin`` for
#: the old single token and the embedded CLI); names are unique per owner. ``cpus`` is per task; ``tasks`` (MPI
#: ranks) and ``nodes``: ``tasks x cpus`` in all over ``nodes``. ``deadline_at`` (``None``: no deadline) and
#: ``user_class`` (gold, silver or regular) feed the ``pasquali`` claim policy; ``params``: named numbers for
#: the user's run-time formula of the job's kind (``{"n": 1000}``).
JOBS = Table(
    "jobs",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("name", String(200), nullable=True),
    Column("owner", String(100), nullable=False, default="admin", server_default="admin"),
    Column("command", Text, nullable=False),
    Column("cwd", Text, nullable=False, default=""),
    Column("env", JSON, nullable=False, default=dict),
    Column("cpus", Integer, nullable=False, default=1),
    Column("tasks", Integer, nullable=False, default=1, server_default="1"),
    Column("nodes", Integer, nullable=False, default=1, server_default="1"),
    Column("mem_mb", Integer, nullable=False, default=0),
    Column("licences", JSON, nullable=False, default=dict),
    Column("time_s", Float, nullable=False, default=0.0),
    Column("deadline_at", Float, nullable=True),
    Column("user_class", String(16), nullable=False, default="regular", server_default="regular"),
    Column("params", JSON, nullable=True),
    Column("state", String(16), nullable=False, default="queued"),
    Column("pending_deps", Integer, nullable=False, default=0),
    Column("attempts", Integer, nullable=False, default=0),
    Column("max_attempts", Integer, nullable=False, default=3),
    Column("exit_code", Integer, nullable=True),
    Column("reason", Text, nullable=False, default=""),
    Column("submit_at", Float, nullable=False),
    Column("start_at", Float, nullable=True),
    Column("end_at", Float, nullable=True),
    Column("site", String(100), nullable=True),
    Column("placeholder_id", String(100), nullable=True),
    Column("lease_until", Float, nullable=True),
    Column("stdout_path", Text, nullable=True),
    Column("stderr_path", Text, nullable=True),
    Index("ix_jobs_ready", "state", "pending_deps", "id"),
    Index("ix_jobs_placeholder", "placeholder_id", "state"),
    Index("ix_jobs_owner_state", "owner", "state"),
    UniqueConstraint("owner", "name", name="uq_jobs_owner_name"),
)

#: ``job_id`` runs only after ``after_id`` ended as ``kind`` asks (``sbatch --dependency``'s types): ``ok``
#: (done), ``any`` (ended in any way), ``notok`` (failed, cancelled or dependency failed).
DEPS = Table(
    "dependencies",
    metadata,
    Column("job_id", Integer, ForeignKey("jobs.id", ondelete="CASCADE"), primary_key=True),
    Column("after_id", Integer, ForeignKey("jobs.id", ondelete="CASCADE"), primary_key=True),
    Column("kind", String(8), nullable=False, default="ok", server_default="ok"),
    Index("ix_dependencies_after", "after_id"),
)

#: A site as last configured by the site manager (``licences``: ``{name: count}`` it offers).
SITES = Table(
    "sites",
    metadata,
    Column("name", String(100), primary_key=True),
    Column("adapter", String(32), nullable=False),
    Column("config", JSON, nullable=False, default=dict),
    Column("licences", JSON, nullable=False, default=dict),
    Column("target", Integer, nullable=False, default=1),
    Column("updated_at", Float, nullable=False, default=0.0),
)

#: A global licence: at most ``copies`` held at once by the jobs of ALL sites (migration 0003). How it combines
#: with a site's own ``licences``: :func:`metasched.model.licence.free_copies`. A claim that may hand out a
#: licence locks these rows (``FOR UPDATE`` on PostgreSQL) first.
LICENCES = Table(
    "licences",
    metadata,
    Column("name", String(100), primary_key=True),
    Column("copies", Integer, nullable=False),
    Column("updated_at", Float, nullable=False, default=0.0),
)

#: The user's run-time formula of a job kind (seconds, from the job's ``params``; migration 0003). ``site`` is
#: ``""`` for every site, else the one site it is for (preferred there). Preferred over learned estimates
#: wherever it can be evaluated (:mod:`metasched.model.formula`).
FORMULAS = Table(
    "formulas",
    metadata,
    Column("kind", String(200), primary_key=True),
    Column("site", String(100), primary_key=True, default=""),
    Column("expression", Text, nullable=False),
    Column("updated_at", Float, nullable=False, default=0.0),
)

#: A placeholder: what we submitted into a site's batch system (``batch_id`` is its id there).
PLACEHOLDERS = Table(
    "placeholders",
    metadata,
    Column("id", String(100), primary_key=True),
    Column("site", String(100), nullable=False, index=True),
    Column("batch_id", String(100), nullable=True),
    Column("state", String(16), nullable=False, default="submitted"),
    Column("submitted_at", Float, nullable=False),
    Column("started_at", Float, nullable=True),
    Column("last_seen_at", Float, nullable=True),
    Column("ended_at", Float, nullable=True),
    Column("wait_s", Float, nullable=True),
    Column("decision", String(16), nullable=True),
    Column("host", String(200), nullable=True),
    Column("jobs_run", Integer, nullable=False, default=0),
)

#: The append-only event log: every state change of a job or placeholder, in order.
EVENTS = Table(
    "events",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("at", Float, nullable=False),
    Column("kind", String(32), nullable=False),
    Column("job_id", Integer, nullable=True, index=True),
    Column("placeholder_id", String(100), nullable=True),
    Column("site", String(100), nullable=True),
    Column("detail", Text, nullable=False, default=""),
)

#: A user of the server (migration 0005): only the SHA-256 of their token is kept. ``role`` is ``user`` (sees
#: and acts on their own jobs) or ``admin`` (sees and acts on all).
USERS = Table(
    "users",
    metadata,
    Column("name", String(100), primary_key=True),
    Column("token_hash", String(64), nullable=False, unique=True),
    Column("role", String(16), nullable=False, default="user"),
    Column("created_at", Float, nullable=False),
)
