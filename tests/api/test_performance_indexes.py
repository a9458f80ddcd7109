"""The performance figures' indexes hold only the inspections with the figure, and a list
filtered or sorted on a figure reads its index: on SQLite, and on PostgreSQL in the
scaled pass."""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event, insert, select, text

from tests.server import own_database
from tracesets.db.engine import Database, sqlite_url
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
    (ListFilter(), "gpu_idle_pct", "gpu_idle_pct"),
    (ListFilter(), "-comm_overlap_pct", "comm_overlap_pct"),
    (ListFilter(), "step_ms", "step_ms"),
]


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Database]:
    """400 tracesets, one in two inspected with figures spread over their range."""
    url = os.environ.get("TRACESETS_TEST_DATABASE_URL", "")
    if url.startswith("postgresql"):
        url = own_database(url)
    else:
        folder: Path = tmp_path_factory.mktemp("performance-indexes")
        url = sqlite_url(folder)
    database = Database(url)
    database.migrate()
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
                }
                for i, seq in enumerate(seqs)
                if i % 2
            ],
        )
        conn.execute(text("ANALYZE"))
    yield database
    database.dispose()


def _definition(db: Database, index: str) -> str:
    if db.is_sqlite:
        query = "SELECT sql FROM sqlite_master WHERE type = 'index' AND name = :name"
    else:
        query = "SELECT indexdef FROM pg_indexes WHERE indexname = :name"
    with db.read() as conn:
        found: str = conn.execute(text(query), {"name": index}).scalar_one()
    return found


@pytest.mark.parametrize("column", COLUMNS)
def test_a_figure_index_holds_only_inspections_with_the_figure(db: Database, column: str) -> None:
    definition = _definition(db, f"ix_inspections_workspace_{column}_seq")
    assert " ".join(definition.replace("(", " ").replace(")", " ").split()).endswith(
        f"WHERE {column} IS NOT NULL"
    ), definition


@pytest.mark.parametrize(("where", "sort", "column"), SEARCHES)
def test_a_performance_search_reads_its_own_index(
    db: Database, where: ListFilter, sort: Sort, column: str
) -> None:
    caught: list[tuple[str, Any]] = []

    def catch(_conn: Any, _cursor: Any, statement: str, params: Any, *_: Any) -> None:
        caught.append((statement, params))

    event.listen(db.engine, "before_cursor_execute", catch)
    try:
        with db.read() as conn:
            page = list_tracesets(
                conn, workspace="w", where=where, limit=5, before_seq=None, sort=sort
            )
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
    finally:
        event.remove(db.engine, "before_cursor_execute", catch)
    assert len(page) == 5
    statements = [(s, p) for s, p in caught if "FROM tracesets" in s]
    assert len(statements) == 2
    for statement, params in statements:
        with db.read() as conn:
            if db.is_sqlite:
                rows = conn.exec_driver_sql("EXPLAIN QUERY PLAN " + statement, params).all()
                plan = "\n".join(row[3] for row in rows)
            else:
                # A few hundred rows fit one page, where a scan costs less than any index:
                # the question is whether the planner can use the partial index.
                conn.exec_driver_sql("SET LOCAL enable_seqscan = off")
                rows = conn.exec_driver_sql("EXPLAIN " + statement, params).all()
                plan = "\n".join(row[0] for row in rows)
        assert f"ix_inspections_workspace_{column}_seq" in plan, plan
