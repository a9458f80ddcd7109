"""Token scopes: what a token may do (read, write, promote).

Tokens made before scopes existed keep every scope.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column(
        "tokens",
        sa.Column("scopes", sa.String(64), nullable=False, server_default="read write promote"),
    )


def downgrade() -> None:
    op.drop_column("tokens", "scopes")
