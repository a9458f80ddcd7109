"""An index of each traceset's files by name, for the per-file download redirect.

``GET …/files/{name}`` finds one file of one traceset by its name: with this index it
reads that row alone, however many files the traceset holds. (Names are at most 1,024
bytes, well within PostgreSQL's limit for a B-tree entry.)

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01
"""

from __future__ import annotations

from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_files_traceset_seq_name", "files", ["traceset_seq", "name"])


def downgrade() -> None:
    op.drop_index("ix_files_traceset_seq_name", "files")
