"""The three workload filter indexes hold only the tracesets that have the value.

Most tracesets declare no workload family, name or global batch size, and every
upload-url paid for three index entries of NULL that no list can ask for: a filter
is ``column = value``, and the database knows a row it matches is not NULL, so both
SQLite and PostgreSQL still pick these indexes for it (bench/list_filter.py prints
the plans; tests/api/test_filter_indexes.py checks them).

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

_SPARSE = ("workload_family", "workload_name", "global_batch_size")


def _index(name: str) -> str:
    return f"ix_tracesets_workspace_{name}_seq"


def upgrade() -> None:
    for name in _SPARSE:
        op.drop_index(_index(name), "tracesets")
        present = sa.text(f"{name} IS NOT NULL")
        op.create_index(
            _index(name),
            "tracesets",
            ["workspace", name, "seq"],
            sqlite_where=present,
            postgresql_where=present,
        )


def downgrade() -> None:
    for name in _SPARSE:
        op.drop_index(_index(name), "tracesets")
        op.create_index(_index(name), "tracesets", ["workspace", name, "seq"])
