"""A traceset's operator rows: summed over its traces at the inspection's end, kept bounded,
stored and read back."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from sqlalchemy import Connection, text

from tracesets.analysis.files import TraceAnalysis
from tracesets.analysis.operators import OperatorRow
from tracesets.analysis.rank import RankAnalysis, Steps
from tracesets.analysis.stored import dumps
from tracesets.db import comparing, queries
from tracesets.db.engine import Database, sqlite_url
from tracesets.inspection.findings import FileFinding
from tracesets.service.joined import join
from tracesets.service.operators import MAX_TRACESET_OPERATORS, traceset_operators


def rows(*named: tuple[str, int, float]) -> list[OperatorRow]:
    """Rows whose first step holds one event of each name, of a tenth of their time."""
    return [OperatorRow(name, count, total, 1, total / 10) for name, count, total in named]


def test_counts_add_up_over_ranks_and_the_first_step_is_the_lowest_ranks() -> None:
    rank_two = rows(("aten::mm", 4, 40.0), ("gemm", 4, 400.0))
    rank_one = rows(("aten::mm", 2, 30.0), ("aten::add", 1, 5.0))
    summed = traceset_operators([(2, rank_two), (None, rows(("x", 1, 1.0))), (1, rank_one)])
    assert summed == [
        OperatorRow("gemm", 4, 400.0, 0, 0.0),
        OperatorRow("aten::mm", 6, 70.0, 1, 3.0),
        OperatorRow("aten::add", 1, 5.0, 1, 0.5),
        OperatorRow("x", 1, 1.0, 0, 0.0),
    ]
    unranked = traceset_operators([(None, rows(("y", 1, 2.0))), (None, rows(("y", 1, 2.0)))])
    assert unranked == [OperatorRow("y", 2, 4.0, 1, 0.2)]
    assert traceset_operators([]) == []


def test_past_the_bound_the_rest_is_one_other_row() -> None:
    many = rows(*((f"op{i:05}", 1, float(i + 1)) for i in range(MAX_TRACESET_OPERATORS + 9)))
    kept = traceset_operators([(0, [*many, OperatorRow("(other)", 3, 1.5, 0, 0.0)])])
    assert len(kept) == MAX_TRACESET_OPERATORS
    assert kept[0].name == f"op{MAX_TRACESET_OPERATORS + 8:05}"
    assert kept[-2].name == "op00010"
    left = [row for row in many if row.name < "op00010"]
    assert kept[-1] == OperatorRow(
        "(other)",
        sum(r.count for r in left) + 3,
        sum(r.total_us for r in left) + 1.5,
        len(left),
        sum(r.first_total_us for r in left),
    )


def _stored(rank: int, operators: list[OperatorRow]) -> tuple[str, str, str]:
    name = f"rank-{rank}.json"
    finding = FileFinding(name, None, "kineto-json", 10, rank=rank, world_size=2)
    analysis = RankAnalysis(4, Steps(0, None, None, None), None, [], operators=operators)
    return name, "done", dumps([finding], [TraceAnalysis(name, None, analysis)])


def test_the_inspections_end_keeps_the_traces_operator_rows(tmp_path: Path) -> None:
    joined = join(
        2, None, [_stored(1, rows(("aten::mm", 2, 30.0))), _stored(0, rows(("aten::mm", 1, 8.0)))]
    )
    assert joined.status == "done"
    assert joined.operators == [OperatorRow("aten::mm", 3, 38.0, 1, 0.8)]
    db = Database(sqlite_url(tmp_path))
    db.migrate()
    with db.write() as conn:
        seq = _inspected(conn)
        comparing.record_operators(conn, seq=seq, rows=joined.operators)
        comparing.record_operators(conn, seq=seq, rows=[replace(joined.operators[0], count=4)])
    with db.read() as conn:
        assert comparing.operators(conn, seq=seq) == [OperatorRow("aten::mm", 4, 38.0, 1, 0.8)]


def _inspected(conn: Connection) -> int:
    conn.execute(
        text(
            "INSERT INTO tracesets (id, workspace, name, status, created_at, updated_at) "
            "VALUES ('t', 'w', 'n', 'ready', '2026-01-01', '2026-01-01')"
        )
    )
    seq = int(conn.execute(text("SELECT seq FROM tracesets WHERE id = 't'")).scalar_one())
    queries.queue_inspection(conn, seq=seq)
    return seq
