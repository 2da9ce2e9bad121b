"""Initial metaqueue schema: jobs, dependencies, sites, placeholders, events.

Revision ID: 0001
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "jobs",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("name", sa.String(200), nullable=True, unique=True),
        sa.Column("command", sa.Text, nullable=False),
        sa.Column("cwd", sa.Text, nullable=False),
        sa.Column("env", sa.JSON, nullable=False),
        sa.Column("cpus", sa.Integer, nullable=False),
        sa.Column("mem_mb", sa.Integer, nullable=False),
        sa.Column("licences", sa.JSON, nullable=False),
        sa.Column("time_s", sa.Float, nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("pending_deps", sa.Integer, nullable=False),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("max_attempts", sa.Integer, nullable=False),
        sa.Column("exit_code", sa.Integer, nullable=True),
        sa.Column("reason", sa.Text, nullable=False),
        sa.Column("submit_at", sa.Float, nullable=False),
        sa.Column("start_at", sa.Float, nullable=True),
        sa.Column("end_at", sa.Float, nullable=True),
        sa.Column("site", sa.String(100), nullable=True),
        sa.Column("placeholder_id", sa.String(100), nullable=True),
        sa.Column("lease_until", sa.Float, nullable=True),
        sa.Column("stdout_path", sa.Text, nullable=True),
        sa.Column("stderr_path", sa.Text, nullable=True),
    )
    op.create_index("ix_jobs_ready", "jobs", ["state", "pending_deps", "id"])
    op.create_index("ix_jobs_placeholder", "jobs", ["placeholder_id", "state"])
    op.create_table(
        "dependencies",
        sa.Column("job_id", sa.Integer, sa.ForeignKey("jobs.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("after_id", sa.Integer, sa.ForeignKey("jobs.id", ondelete="CASCADE"), primary_key=True),
    )
    op.create_index("ix_dependencies_after", "dependencies", ["after_id"])
    op.create_table(
        "sites",
        sa.Column("name", sa.String(100), primary_key=True),
        sa.Column("adapter", sa.String(32), nullable=False),
        sa.Column("config", sa.JSON, nullable=False),
        sa.Column("licences", sa.JSON, nullable=False),
        sa.Column("target", sa.Integer, nullable=False),
        sa.Column("updated_at", sa.Float, nullable=False),
    )
    op.create_table(
        "placeholders",
        sa.Column("id", sa.String(100), primary_key=True),
        sa.Column("site", sa.String(100), nullable=False),
        sa.Column("batch_id", sa.String(100), nullable=True),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("submitted_at", sa.Float, nullable=False),
        sa.Column("started_at", sa.Float, nullable=True),
        sa.Column("last_seen_at", sa.Float, nullable=True),
        sa.Column("ended_at", sa.Float, nullable=True),
        sa.Column("wait_s", sa.Float, nullable=True),
        sa.Column("decision", sa.String(16), nullable=True),
        sa.Column("host", sa.String(200), nullable=True),
        sa.Column("jobs_run", sa.Integer, nullable=False),
    )
    op.create_index("ix_placeholders_site", "placeholders", ["site"])
    op.create_table(
        "events",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("at", sa.Float, nullable=False),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("job_id", sa.Integer, nullable=True),
        sa.Column("placeholder_id", sa.String(100), nullable=True),
        sa.Column("site", sa.String(100), nullable=True),
        sa.Column("detail", sa.Text, nullable=False),
    )
    op.create_index("ix_events_job_id", "events", ["job_id"])


def downgrade() -> None:
    for table in ("events", "placeholders", "sites", "dependencies", "jobs"):
        op.drop_table(table)
