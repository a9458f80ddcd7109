"""What comparing two tracesets reads and writes.

``inspection_operators``: each operator and kernel name's count and time, summed over
ranks (and in the first step of the first rank), written when the inspection is done, so
a comparison reads a few thousand rows, not every rank's traces. ``tracesets.baseline_id``:
the traceset upload-url named to compare with. ``inspections.baseline_id``: the one the
finished inspection compared with (named, or chosen), and ``inspections.regressed``
whether the traceset regressed against it, with a (workspace, regressed, traceset) index
holding only the inspections compared, as 0013's figure indexes do.

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-08
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

_INDEX = "ix_inspections_workspace_regressed_seq"


def upgrade() -> None:
    op.create_table(
        "inspection_operators",
        sa.Column(
            "traceset_seq",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            sa.ForeignKey("inspections.traceset_seq", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("position", sa.Integer, primary_key=True),
        sa.Column("name", sa.Text, nullable=False),
        sa.Column("count", sa.BigInteger, nullable=False),
        sa.Column("total_us", sa.Double, nullable=False),
        sa.Column("first_count", sa.BigInteger, nullable=False),
        sa.Column("first_total_us", sa.Double, nullable=False),
    )
    op.add_column("tracesets", sa.Column("baseline_id", sa.String(32), nullable=True))
    op.add_column("inspections", sa.Column("baseline_id", sa.String(32), nullable=True))
    op.add_column("inspections", sa.Column("regressed", sa.Boolean, nullable=True))
    present = sa.text("regressed IS NOT NULL")
    op.create_index(
        _INDEX,
        "inspections",
        ["workspace", "regressed", "traceset_seq"],
        sqlite_where=present,
        postgresql_where=present,
    )


def downgrade() -> None:
    op.drop_index(_INDEX, "inspections")
    with op.batch_alter_table("inspections") as batch:
        batch.drop_column("regressed")
        batch.drop_column("baseline_id")
    # Not a batch: SQLite's batch copies the table, and cannot copy tracesets' generated
    # columns (0002); both engines drop a plain column in place (SQLite since 3.35).
    op.execute("ALTER TABLE tracesets DROP COLUMN baseline_id")
    op.drop_table("inspection_operators")
