"""The performance figures' indexes hold only the inspections with the figure, and a list
filtered or sorted on a figure reads its index: on SQLite, and on PostgreSQL in the
scaled pass."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from sqlalchemy import insert, select, text

from tests.plans import assert_partial_on, plan_of, run_database, sent
from tracesets.db.engine import Database
from tracesets.db.listing import list_tracesets
from tracesets.db.tables import inspections, tracesets
from tracesets.performance import COLUMNS
from tracesets.vocabulary import ListFilter, Sort

WHEN = datetime(2026, 12, 5, 10, 0, tzinfo=UTC)
#: Each figure's filters, and each sort, with the index it reads.
SEARCHES: list[tuple[ListFilter, Sort, str]] = [
    (ListFilter(gpu_idle_pct_max=10.0), "-created", "gpu_idle_pct"),
    (ListFilter(gpu_idle_pct_min=90.0), "-created", "gpu_idle_pct"),
    (ListFilter(comm_overlap_pct_min=95.0), "-created", "comm_overlap_pct"),
    (ListFilter(step_ms_max=40.0), "-created", "step_ms"),
    (ListFilter(has_stragglers=True), "-created", "has_stragglers"),
    (ListFilter(regressed=True), "-created", "regressed"),
    (ListFilter(), "gpu_idle_pct", "gpu_idle_pct"),
    (ListFilter(), "-comm_overlap_pct", "comm_overlap_pct"),
    (ListFilter(), "step_ms", "step_ms"),
]


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Database]:
    """400 tracesets, one in two inspected with figures spread over their range."""
    database = run_database(tmp_path_factory, "performance-indexes")
    row = {"workspace": "w", "name": "n", "status": "ready", "created_at": WHEN}
    with database.write() as conn:
        conn.execute(
            insert(tracesets), [{**row, "id": f"t{i:04d}", "updated_at": WHEN} for i in range(400)]
        )
        seqs = conn.execute(select(tracesets.c.seq).order_by(tracesets.c.seq)).scalars().all()
        conn.execute(
            insert(inspections),
            [
                {
                    "traceset_seq": seq,
                    "workspace": "w",
                    "status": "done",
                    "attempts": 1,
                    "gpu_idle_pct": (i * 37) % 100,
                    "comm_overlap_pct": (i * 53) % 100,
                    "step_ms": 1 + (i * 7) % 200,
                    "has_stragglers": i % 10 == 1,
                    "regressed": i % 10 == 3 if i % 4 == 1 else None,
                }
                for i, seq in enumerate(seqs)
                if i % 2
            ],
        )
        conn.execute(text("ANALYZE"))
    yield database
    database.dispose()


@pytest.mark.parametrize("column", [*COLUMNS, "regressed"])
def test_a_figure_index_holds_only_inspections_with_the_figure(db: Database, column: str) -> None:
    assert_partial_on(db, f"ix_inspections_workspace_{column}_seq", column)


@pytest.mark.parametrize(("where", "sort", "column"), SEARCHES)
def test_a_performance_search_reads_its_own_index(
    db: Database, where: ListFilter, sort: Sort, column: str
) -> None:
    with sent(db) as caught, db.read() as conn:
        page = list_tracesets(conn, workspace="w", where=where, limit=5, before_seq=None, sort=sort)
        # the next page, from the keyset of the last row
        last = page[-1]
        after = None if sort == "-created" else getattr(last.performance, column)
        list_tracesets(
            conn,
            workspace="w",
            where=where,
            limit=5,
            before_seq=last.seq,
            sort=sort,
            after_figure=after,
        )
    assert len(page) == 5
    statements = [(s, p) for s, p in caught if "FROM tracesets" in s]
    assert len(statements) == 2
    for statement, params in statements:
        plan = plan_of(db, statement, params)
        assert f"ix_inspections_workspace_{column}_seq" in plan, plan
