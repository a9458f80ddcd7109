"""Inspections claimed file by file, so that every worker can share one traceset.

An inspection gets one ``inspection_files`` row per primary file when a process first
takes it up. Each row is claimed on its own: its ``owner`` holds it until
``lease_until``, which the owner keeps pushing forward while it reads the file; a row
whose lease ran out (its process died) is claimable again. ``result`` keeps the file's
findings and figures until the last file is done and the traceset's checks join them.

``inspections.checked_by`` names the process that finished the last file and ran the
checks across ranks, once.

Inspections that an older process had claimed as a whole go back to pending, to be
taken up file by file.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "inspection_files",
        sa.Column(
            "traceset_seq",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            sa.ForeignKey("inspections.traceset_seq", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("idx", sa.Integer, primary_key=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("owner", sa.String(128), nullable=True),
        sa.Column("lease_until", sa.DateTime(timezone=True), nullable=True),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("result", sa.Text, nullable=True),
    )
    op.create_index(
        "ix_inspection_files_status", "inspection_files", ["status", "traceset_seq", "idx"]
    )
    op.add_column("inspections", sa.Column("checked_by", sa.String(128), nullable=True))
    op.execute("UPDATE inspections SET status = 'pending' WHERE status = 'running'")


def downgrade() -> None:
    op.drop_column("inspections", "checked_by")
    op.drop_table("inspection_files")
