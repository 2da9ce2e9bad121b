"""Parallel jobs (issue 36, item 5): MPI ranks (``tasks``) and nodes a job asks for besides its cpus.

``cpus`` becomes cpus per task (a job with one task, the default, keeps its old meaning); a job
needs ``tasks x cpus`` cpus in all, spread over ``nodes`` nodes.

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.add_column(sa.Column("tasks", sa.Integer, nullable=False, server_default="1"))
        batch.add_column(sa.Column("nodes", sa.Integer, nullable=False, server_default="1"))


def downgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.drop_column("nodes")
        batch.drop_column("tasks")
