"""Multipart uploads: each file remembers its store's upload id and part size.

Kept in the database, not in a process, so any service process can resume or finish
an upload another one started. The (status, created_at) index finds abandoned
pending tracesets for the sweeper.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("files", sa.Column("upload_id", sa.String(1024), nullable=True))
    op.add_column("files", sa.Column("part_size", sa.BigInteger, nullable=True))
    op.create_index("ix_tracesets_status_created_at", "tracesets", ["status", "created_at"])


def downgrade() -> None:
    op.drop_index("ix_tracesets_status_created_at", "tracesets")
    op.drop_column("files", "part_size")
    op.drop_column("files", "upload_id")
