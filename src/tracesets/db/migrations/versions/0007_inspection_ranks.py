"""Per-rank figures of inspections, and whether the ranks agree with each other.

``inspection_ranks`` holds one row per trace, in rank order, for the paged per-rank
route (the inspection's own JSON shows only the first ranks). ``consistent`` is kept as
a column, like ``ok``, so the list's ``ranks_consistent`` filter is an index lookup.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("inspections", sa.Column("consistent", sa.Boolean, nullable=True))
    op.create_index("ix_inspections_consistent", "inspections", ["consistent", "traceset_seq"])
    op.create_table(
        "inspection_ranks",
        sa.Column(
            "traceset_seq",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            sa.ForeignKey("inspections.traceset_seq", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("position", sa.Integer, primary_key=True),
        sa.Column("figures", sa.Text, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("inspection_ranks")
    op.drop_index("ix_inspections_consistent", "inspections")
    op.drop_column("inspections", "consistent")
