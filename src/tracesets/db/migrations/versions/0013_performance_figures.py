"""Each inspection's performance figures, for the list to filter and sort on.

The medians over ranks of GPU idle %, communication overlap % and step time, and whether
any rank straggles (``tracesets.performance``): NULL until the inspection is done, and
after if no rank has the figure. Each has a (workspace, figure, traceset) index holding
only the inspections with the figure, as 0010's filter indexes do: a figure filter or
sort never matches NULL, so both SQLite and PostgreSQL still pick them, and the sorted
list walks one in its own order.

Inspections done before this revision get their figures from the per-rank figures they
stored (0007); those stored before per-rank figures existed have none and keep NULL.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-05
"""

from __future__ import annotations

import orjson
import sqlalchemy as sa
from alembic import op

from tracesets.performance import COLUMNS, of_ranks

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None

_TYPES = {
    "gpu_idle_pct": sa.Double(),
    "comm_overlap_pct": sa.Double(),
    "step_ms": sa.Double(),
    "has_stragglers": sa.Boolean(),
}


def _index(name: str) -> str:
    return f"ix_inspections_workspace_{name}_seq"


def upgrade() -> None:
    for name in COLUMNS:
        op.add_column("inspections", sa.Column(name, _TYPES[name], nullable=True))
    conn = op.get_bind()
    done = sa.text(
        "SELECT DISTINCT inspections.traceset_seq FROM inspections JOIN inspection_ranks "
        "ON inspection_ranks.traceset_seq = inspections.traceset_seq "
        "WHERE inspections.status = 'done' ORDER BY inspections.traceset_seq"
    )
    ranks = sa.text("SELECT figures FROM inspection_ranks WHERE traceset_seq = :seq")
    figured = sa.text(
        f"UPDATE inspections SET {', '.join(f'{n} = :{n}' for n in COLUMNS)} "
        "WHERE traceset_seq = :seq"
    )
    for seq in conn.execute(done).scalars().all():
        found = of_ranks(orjson.loads(t) for t in conn.execute(ranks, {"seq": seq}).scalars())
        conn.execute(figured, {"seq": seq, **{n: getattr(found, n) for n in COLUMNS}})
    for name in COLUMNS:
        present = sa.text(f"{name} IS NOT NULL")
        op.create_index(
            _index(name),
            "inspections",
            ["workspace", name, "traceset_seq"],
            sqlite_where=present,
            postgresql_where=present,
        )


def downgrade() -> None:
    for name in COLUMNS:
        op.drop_index(_index(name), "inspections")
    with op.batch_alter_table("inspections") as batch:
        for name in COLUMNS:
            batch.drop_column(name)
