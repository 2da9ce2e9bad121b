"""Jobs carry a deadline and a user class (the two-level scheduler's priorities, seed 004).

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.add_column(sa.Column("deadline_at", sa.Float, nullable=True))
        batch.add_column(sa.Column("user_class", sa.String(16), nullable=False, server_default="regular"))


def downgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.drop_column("user_class")
        batch.drop_column("deadline_at")
