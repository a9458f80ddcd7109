"""How complete found each file whole: who vouched for its bytes, and the value.

``checked_by`` is ``sha256`` (the service hashed every byte), ``s3-sha256`` (S3's
whole-object SHA-256) or ``s3-composite-sha256`` (S3's composite of the declared parts'
SHA-256); ``checked_checksum`` is the value as its source wrote it. Files completed
before this revision have neither.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("files", sa.Column("checked_by", sa.String(32), nullable=True))
    op.add_column("files", sa.Column("checked_checksum", sa.String(128), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("files") as batch:
        batch.drop_column("checked_checksum")
        batch.drop_column("checked_by")
