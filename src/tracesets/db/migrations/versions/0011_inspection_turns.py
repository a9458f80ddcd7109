"""Inspection takes workspaces in turn, so one workspace's flood delays no other's.

``inspections.workspace`` (the traceset's, copied when the inspection is queued: a
traceset never changes workspace) and the (status, workspace, traceset_seq) index find
the workspaces with unfinished inspections with one index seek each, and a workspace's
oldest pending inspection, or its running ones, with one more: however many files or
tracesets one workspace queued, a claim never scans them. It replaces the (status,
traceset_seq) index, which only found the oldest pending inspection of all.

``inspection_turns`` keeps, per workspace, when its files were last claimed: an
increasing counter (not a clock, which machines disagree on). The next claim goes to the
workspace with unfinished work served least recently. A row is never deleted: a
workspace that had nothing to inspect for a while keeps its place, and no enqueue has to
touch it.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-04
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column(
        "inspections",
        sa.Column("workspace", sa.String(128), nullable=False, server_default=""),
    )
    op.execute(
        "UPDATE inspections SET workspace = "
        "(SELECT tracesets.workspace FROM tracesets WHERE tracesets.seq = inspections.traceset_seq)"
    )
    op.drop_index("ix_inspections_status", "inspections")
    op.create_index(
        "ix_inspections_status_workspace",
        "inspections",
        ["status", "workspace", "traceset_seq"],
    )
    op.create_table(
        "inspection_turns",
        sa.Column("workspace", sa.String(128), primary_key=True),
        sa.Column("served", sa.BigInteger, nullable=False),
    )
    op.create_index("ix_inspection_turns_served", "inspection_turns", ["served"])


def downgrade() -> None:
    op.drop_table("inspection_turns")
    op.drop_index("ix_inspections_status_workspace", "inspections")
    op.create_index("ix_inspections_status", "inspections", ["status", "traceset_seq"])
    op.drop_column("inspections", "workspace")
