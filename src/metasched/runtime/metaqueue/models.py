"""SQLAlchemy 2 models of the metaqueue. The schema is created by the Alembic migrations next to this
file (``migrations/``), never by ``create_all``: change a model, add a migration.

Times are Unix epoch seconds (floats); durations end in ``_s``.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import JSON, Float, ForeignKey, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


class Base(DeclarativeBase):
    pass


class JobRow(Base):
    """One job of the metaqueue: the user's command line, its resources and its life.

    ``pending_deps`` counts the dependencies not yet ``done``; a job is ready when it is
    ``queued`` and ``pending_deps == 0`` (kept up to date in the same transaction that finishes a
    dependency, so claiming never joins the dependency table). ``attempts`` counts claims;
    ``lease_until`` is when the running placeholder's lease ends unless renewed by a heartbeat.
    """

    __tablename__ = "jobs"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    name: Mapped[str | None] = mapped_column(String(200), nullable=True)
    #: The user who submitted it (migration 0004; ``admin`` for the old single token and the embedded CLI).
    #: Names are unique per owner.
    owner: Mapped[str] = mapped_column(String(100), default="admin", server_default="admin")
    command: Mapped[str] = mapped_column(Text)
    cwd: Mapped[str] = mapped_column(Text, default="")
    env: Mapped[dict[str, str]] = mapped_column(JSON, default=dict)
    #: cpus per task; ``tasks`` (MPI ranks) and ``nodes`` (migration 0004): ``tasks x cpus`` in all over ``nodes``.
    cpus: Mapped[int] = mapped_column(Integer, default=1)
    tasks: Mapped[int] = mapped_column(Integer, default=1, server_default="1")
    nodes: Mapped[int] = mapped_column(Integer, default=1, server_default="1")
    mem_mb: Mapped[int] = mapped_column(Integer, default=0)
    licences: Mapped[dict[str, int]] = mapped_column(JSON, default=dict)
    time_s: Mapped[float] = mapped_column(Float, default=0.0)
    #: The instant the user wants the job done by (``None``: no deadline); ``user_class``: gold,
    #: silver or regular. Both feed the ``pasquali`` claim policy (migration 0002).
    deadline_at: Mapped[float | None] = mapped_column(Float, nullable=True)
    user_class: Mapped[str] = mapped_column(String(16), default="regular", server_default="regular")
    #: Named numbers for the user's run-time formula of the job's kind (``{"n": 1000}``; migration 0003).
    params: Mapped[dict[str, float] | None] = mapped_column(JSON, nullable=True)
    state: Mapped[str] = mapped_column(String(16), default="queued")
    pending_deps: Mapped[int] = mapped_column(Integer, default=0)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    max_attempts: Mapped[int] = mapped_column(Integer, default=3)
    exit_code: Mapped[int | None] = mapped_column(Integer, nullable=True)
    reason: Mapped[str] = mapped_column(Text, default="")
    submit_at: Mapped[float] = mapped_column(Float)
    start_at: Mapped[float | None] = mapped_column(Float, nullable=True)
    end_at: Mapped[float | None] = mapped_column(Float, nullable=True)
    site: Mapped[str | None] = mapped_column(String(100), nullable=True)
    placeholder_id: Mapped[str | None] = mapped_column(String(100), nullable=True)
    lease_until: Mapped[float | None] = mapped_column(Float, nullable=True)
    stdout_path: Mapped[str | None] = mapped_column(Text, nullable=True)
    stderr_path: Mapped[str | None] = mapped_column(Text, nullable=True)

    __table_args__ = (
        Index("ix_jobs_ready", "state", "pending_deps", "id"),
        Index("ix_jobs_placeholder", "placeholder_id", "state"),
        Index("ix_jobs_owner_state", "owner", "state"),
        UniqueConstraint("owner", "name", name="uq_jobs_owner_name"),
    )


class DependencyRow(Base):
    """``job_id`` runs only after ``after_id`` ended as ``kind`` asks (``sbatch --dependency``'s types):
    ``ok`` (done), ``any`` (ended in any way), ``notok`` (failed, cancelled or dependency failed)."""

    __tablename__ = "dependencies"

    job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"), primary_key=True)
    after_id: Mapped[int] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"), primary_key=True)
    kind: Mapped[str] = mapped_column(String(8), default="ok", server_default="ok")

    __table_args__ = (Index("ix_dependencies_after", "after_id"),)


class SiteRow(Base):
    """A site as last configured by the site manager (``licences``: ``{name: count}`` it offers)."""

    __tablename__ = "sites"

    name: Mapped[str] = mapped_column(String(100), primary_key=True)
    adapter: Mapped[str] = mapped_column(String(32))
    config: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    licences: Mapped[dict[str, int]] = mapped_column(JSON, default=dict)
    target: Mapped[int] = mapped_column(Integer, default=1)
    updated_at: Mapped[float] = mapped_column(Float, default=0.0)


class LicenceRow(Base):
    """A global licence: at most ``copies`` held at once by the jobs of ALL sites (migration 0003).

    How it combines with a site's own ``licences``: :func:`metasched.model.licence.free_copies`.
    A claim that may hand out a licence locks these rows (``FOR UPDATE`` on PostgreSQL) first.
    """

    __tablename__ = "licences"

    name: Mapped[str] = mapped_column(String(100), primary_key=True)
    copies: Mapped[int] = mapped_column(Integer)
    updated_at: Mapped[float] = mapped_column(Float, default=0.0)


class FormulaRow(Base):
    """The user's run-time formula of a job kind (seconds, from the job's ``params``; migration 0003).

    ``site`` is ``""`` for every site, else the one site it is for (preferred there). Preferred over
    learned estimates wherever it can be evaluated (:mod:`metasched.model.formula`).
    """

    __tablename__ = "formulas"

    kind: Mapped[str] = mapped_column(String(200), primary_key=True)
    site: Mapped[str] = mapped_column(String(100), primary_key=True, default="")
    expression: Mapped[str] = mapped_column(Text)
    updated_at: Mapped[float] = mapped_column(Float, default=0.0)


class PlaceholderRow(Base):
    """A placeholder: what we submitted into a site's batch system (``batch_id`` is its id there)."""

    __tablename__ = "placeholders"

    id: Mapped[str] = mapped_column(String(100), primary_key=True)
    site: Mapped[str] = mapped_column(String(100), index=True)
    batch_id: Mapped[str | None] = mapped_column(String(100), nullable=True)
    state: Mapped[str] = mapped_column(String(16), default="submitted")
    submitted_at: Mapped[float] = mapped_column(Float)
    started_at: Mapped[float | None] = mapped_column(Float, nullable=True)
    last_seen_at: Mapped[float | None] = mapped_column(Float, nullable=True)
    ended_at: Mapped[float | None] = mapped_column(Float, nullable=True)
    wait_s: Mapped[float | None] = mapped_column(Float, nullable=True)
    decision: Mapped[str | None] = mapped_column(String(16), nullable=True)
    host: Mapped[str | None] = mapped_column(String(200), nullable=True)
    jobs_run: Mapped[int] = mapped_column(Integer, default=0)


class EventRow(Base):
    """The append-only event log: every state change of a job or placeholder, in order."""

    __tablename__ = "events"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    at: Mapped[float] = mapped_column(Float)
    kind: Mapped[str] = mapped_column(String(32))
    job_id: Mapped[int | None] = mapped_column(Integer, nullable=True, index=True)
    placeholder_id: Mapped[str | None] = mapped_column(String(100), nullable=True)
    site: Mapped[str | None] = mapped_column(String(100), nullable=True)
    detail: Mapped[str] = mapped_column(Text, default="")


class UserRow(Base):
    """A user of the server (migration 0004): only the SHA-256 of their token is kept.

    ``role`` is ``user`` (sees and acts on their own jobs) or ``admin`` (sees and acts on all)."""

    __tablename__ = "users"

    name: Mapped[str] = mapped_column(String(100), primary_key=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    role: Mapped[str] = mapped_column(String(16), default="user")
    created_at: Mapped[float] = mapped_column(Float)
