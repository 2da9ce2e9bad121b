"""Global licence limits (copies active at once across all sites); job parameters and run-time formulas.

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "licences",
        sa.Column("name", sa.String(100), primary_key=True),
        sa.Column("copies", sa.Integer, nullable=False),
        sa.Column("updated_at", sa.Float, nullable=False),
    )
    op.create_table(
        "formulas",
        sa.Column("kind", sa.String(200), primary_key=True),
        sa.Column("site", sa.String(100), primary_key=True),
        sa.Column("expression", sa.Text, nullable=False),
        sa.Column("updated_at", sa.Float, nullable=False),
    )
    with op.batch_alter_table("jobs") as batch:
        batch.add_column(sa.Column("params", sa.JSON, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.drop_column("params")
    op.drop_table("formulas")
    op.drop_table("licences")
