"""The statements of a comparison: each side's state and stored figures, its operator rows."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from sqlalchemy import Connection, bindparam, delete, insert, select, update

from tracesets.analysis.operators import OperatorRow
from tracesets.db.tables import inspection_operators, inspection_ranks, inspections, tracesets
from tracesets.performance import COLUMNS as PERFORMANCE
from tracesets.performance import Performance


@dataclass(frozen=True, slots=True)
class SideState:
    """Where one traceset stands, as a comparison needs it."""

    seq: int
    status: str
    inspection_status: str | None  # None: no inspection (not complete, or no primary file)
    performance: Performance


_STATE: Final = (
    select(
        tracesets.c.seq,
        tracesets.c.status,
        inspections.c.status.label("inspection_status"),
        *(inspections.c[name] for name in PERFORMANCE),
    )
    .select_from(tracesets.outerjoin(inspections, inspections.c.traceset_seq == tracesets.c.seq))
    .where(tracesets.c.id == bindparam("traceset_id"), tracesets.c.workspace == bindparam("ws"))
)
_FIGURES: Final = (
    select(inspection_ranks.c.figures)
    .where(inspection_ranks.c.traceset_seq == bindparam("seq"))
    .order_by(inspection_ranks.c.position)
)
_OPERATORS: Final = (
    select(
        inspection_operators.c.name,
        inspection_operators.c.count,
        inspection_operators.c.total_us,
        inspection_operators.c.first_count,
        inspection_operators.c.first_total_us,
    )
    .where(inspection_operators.c.traceset_seq == bindparam("seq"))
    .order_by(inspection_operators.c.position)
)


def side_state(conn: Connection, *, workspace: str, traceset_id: str) -> SideState | None:
    row = conn.execute(_STATE, {"traceset_id": traceset_id, "ws": workspace}).one_or_none()
    if row is None:
        return None
    performance = Performance(
        row.gpu_idle_pct,
        row.comm_overlap_pct,
        row.step_ms,
        None if row.has_stragglers is None else bool(row.has_stragglers),
    )
    return SideState(row.seq, row.status, row.inspection_status, performance)


def rank_figures(conn: Connection, *, seq: int) -> list[str]:
    """Every trace's figures (JSON text) in rank order."""
    return list(conn.execute(_FIGURES, {"seq": seq}).scalars())


def operators(conn: Connection, *, seq: int) -> list[OperatorRow]:
    return [OperatorRow(*row) for row in conn.execute(_OPERATORS, {"seq": seq})]


def record_operators(conn: Connection, *, seq: int, rows: Sequence[OperatorRow]) -> None:
    """A finished inspection's operator rows, in place of any an earlier attempt wrote."""
    conn.execute(delete(inspection_operators).where(inspection_operators.c.traceset_seq == seq))
    if rows:
        conn.execute(
            insert(inspection_operators),
            [
                {
                    "traceset_seq": seq,
                    "position": position,
                    "name": row.name,
                    "count": row.count,
                    "total_us": row.total_us,
                    "first_count": row.first_count,
                    "first_total_us": row.first_total_us,
                }
                for position, row in enumerate(rows)
            ],
        )


def named_or_chosen_baseline(conn: Connection, *, seq: int) -> tuple[str, str | None]:
    """(the traceset's workspace, the id of its baseline): the one its upload named, else
    the most recently promoted traceset of the workspace with the same workload family,
    workload name (when it has one) and rank count; None without a family or a rank
    count, or when no other traceset matches."""
    row = conn.execute(
        select(
            tracesets.c.workspace,
            tracesets.c.baseline_id,
            tracesets.c.workload_family,
            tracesets.c.workload_name,
            tracesets.c.rank_count,
        ).where(tracesets.c.seq == seq)
    ).one()
    if row.baseline_id is not None or row.workload_family is None or row.rank_count is None:
        return row.workspace, row.baseline_id
    chosen = select(tracesets.c.id).where(
        tracesets.c.workspace == row.workspace,
        tracesets.c.workload_family == row.workload_family,
        tracesets.c.rank_count == row.rank_count,
        tracesets.c.status == "promoted",
        tracesets.c.seq != seq,
    )
    if row.workload_name is not None:
        chosen = chosen.where(tracesets.c.workload_name == row.workload_name)
    found = conn.execute(
        chosen.order_by(tracesets.c.promoted_at.desc(), tracesets.c.seq.desc()).limit(1)
    ).scalar_one_or_none()
    return row.workspace, found


def record_baseline(
    conn: Connection, *, seq: int, baseline_id: str | None, regressed: bool | None
) -> None:
    conn.execute(
        update(inspections)
        .where(inspections.c.traceset_seq == seq)
        .values(baseline_id=baseline_id, regressed=regressed)
    )
