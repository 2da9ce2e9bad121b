"""Users and job owners, dependency kinds (issue 36): a ``users`` table (token hashes only),
``jobs.owner`` (jobs from before belong to ``admin``, the old single token's identity); job names are
unique per owner, no longer across the metaqueue. ``dependencies.kind``: ``ok`` (as before), ``any`` or
``notok`` (``sbatch --dependency``).

Revision ID: 0005
Revises: 0004
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

#: SQLite's unnamed UNIQUE(name) of 0001 gets this name in batch mode, so that it can be dropped.
_CONVENTION = {"uq": "uq_%(table_name)s_%(column_0_name)s"}


def upgrade() -> None:
    op.create_table(
        "users",
        sa.Column("name", sa.String(100), primary_key=True),
        sa.Column("token_hash", sa.String(64), nullable=False, unique=True),
        sa.Column("role", sa.String(16), nullable=False, server_default="user"),
        sa.Column("created_at", sa.Float, nullable=False),
    )
    postgres = op.get_bind().dialect.name == "postgresql"
    with op.batch_alter_table("jobs", naming_convention=_CONVENTION) as batch:
        batch.add_column(sa.Column("owner", sa.String(100), nullable=False, server_default="admin"))
        batch.drop_constraint("jobs_name_key" if postgres else "uq_jobs_name", type_="unique")
        batch.create_unique_constraint("uq_jobs_owner_name", ["owner", "name"])
        batch.create_index("ix_jobs_owner_state", ["owner", "state"])
    with op.batch_alter_table("dependencies") as batch:
        batch.add_column(sa.Column("kind", sa.String(8), nullable=False, server_default="ok"))


def downgrade() -> None:
    with op.batch_alter_table("dependencies") as batch:
        batch.drop_column("kind")
    with op.batch_alter_table("jobs") as batch:
        batch.drop_index("ix_jobs_owner_state")
        batch.drop_constraint("uq_jobs_owner_name", type_="unique")
        batch.drop_column("owner")
        batch.create_unique_constraint("jobs_name_key", ["name"])
    op.drop_table("users")
