"""Inspections: what a traceset's trace files say about their ranks.

One row per completed traceset with primary files. Any service process may claim a
pending row (or one whose claim went stale: its process died) and record the result,
so inspection survives restarts and spreads over processes. ``ok`` is kept as a column
so the list's ``inspected_ok`` filter is an index lookup.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "inspections",
        sa.Column(
            "traceset_seq",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            sa.ForeignKey("tracesets.seq", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("claimed_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("ok", sa.Boolean, nullable=True),
        sa.Column("result", sa.Text, nullable=True),
    )
    op.create_index("ix_inspections_status", "inspections", ["status", "traceset_seq"])
    op.create_index("ix_inspections_ok", "inspections", ["ok", "traceset_seq"])


def downgrade() -> None:
    op.drop_table("inspections")
