"""Tokens, tracesets and their files.

Revision ID: 0001
Revises:
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

Seq = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "tokens",
        sa.Column("id", Seq, primary_key=True, autoincrement=True),
        sa.Column("workspace", sa.String(128), nullable=False),
        sa.Column("token_hash", sa.String(64), nullable=False, unique=True),
        sa.Column("name", sa.String(256), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
    )
    op.create_table(
        "tracesets",
        sa.Column("seq", Seq, primary_key=True, autoincrement=True),
        sa.Column("id", sa.String(32), nullable=False, unique=True),
        sa.Column("workspace", sa.String(128), nullable=False),
        sa.Column("name", sa.String(256), nullable=False),
        sa.Column("description", sa.Text, nullable=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("promoted_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("workload_metadata", sa.Text, nullable=True),
        sa.Column("rank_count", sa.BigInteger, nullable=True),
    )
    # Every list query is "this workspace, newest first", optionally narrowed.
    op.create_index("ix_tracesets_workspace_seq", "tracesets", ["workspace", "seq"])
    op.create_index(
        "ix_tracesets_workspace_status_seq", "tracesets", ["workspace", "status", "seq"]
    )
    op.create_index(
        "ix_tracesets_workspace_rank_count_seq", "tracesets", ["workspace", "rank_count", "seq"]
    )
    op.create_table(
        "files",
        sa.Column(
            "traceset_seq",
            Seq,
            sa.ForeignKey("tracesets.seq", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("idx", sa.Integer, primary_key=True),
        sa.Column("name", sa.String(1024), nullable=False),
        sa.Column("size", sa.BigInteger, nullable=False),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("sha256_declared", sa.String(64), nullable=True),
        sa.Column("sha256", sa.String(64), nullable=True),
        sa.Column("received", sa.Boolean, nullable=False),
        sa.Column("received_at", sa.DateTime(timezone=True), nullable=True),
    )


def downgrade() -> None:
    op.drop_table("files")
    op.drop_table("tracesets")
    op.drop_table("tokens")
