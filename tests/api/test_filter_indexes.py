"""The workload filters' indexes hold only the tracesets that declare the value, and a
filtered list still reads them: on SQLite, and on PostgreSQL in the scaled pass."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event, insert, text

from tests.server import own_database
from tracesets.db.engine import Database, sqlite_url
from tracesets.db.listing import list_tracesets
from tracesets.db.tables import tracesets
from tracesets.vocabulary import ListFilter

WHEN = datetime(2026, 12, 3, 10, 0, tzinfo=UTC)
SPARSE = ("workload_family", "workload_name", "global_batch_size")
FILTERS = {
    "workload_family": ListFilter(workload_family="llama"),
    "workload_name": ListFilter(workload_name="llama-70b"),
    "global_batch_size": ListFilter(global_batch_size=1024),
}


def _metadata(i: int) -> dict[str, Any]:
    """One traceset in four declares the filtered members; the others only a rank count."""
    if i % 4:
        return {"shape": {"rankCount": 8}}
    return {
        "shape": {"rankCount": 8, "global_batch_size": 1024 if i % 8 else 2048},
        "workload_family": "llama" if i % 8 else "gpt",
        "workload_name": "llama-70b" if i % 8 else "gpt-3",
    }


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Database]:
    url = os.environ.get("TRACESETS_TEST_DATABASE_URL", "")
    if url.startswith("postgresql"):
        url = own_database(url)
    else:
        folder: Path = tmp_path_factory.mktemp("filter-indexes")
        url = sqlite_url(folder)
    database = Database(url)
    database.migrate()
    rows = [
        {
            "id": f"t{i:04d}",
            "workspace": "w",
            "name": "n",
            "status": "ready",
            "created_at": WHEN,
            "updated_at": WHEN,
            "workload_metadata": json.dumps(_metadata(i)),
            "rank_count": 8,
        }
        for i in range(400)
    ]
    with database.write() as conn:
        conn.execute(insert(tracesets), rows)
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


@pytest.mark.parametrize("column", SPARSE)
def test_a_filter_index_holds_only_rows_with_the_value(db: Database, column: str) -> None:
    definition = _definition(db, f"ix_tracesets_workspace_{column}_seq")
    assert " ".join(definition.replace("(", " ").replace(")", " ").split()).endswith(
        f"WHERE {column} IS NOT NULL"
    ), definition


@pytest.mark.parametrize("column", SPARSE)
def test_a_filtered_list_reads_its_own_index(db: Database, column: str) -> None:
    caught: list[tuple[str, Any]] = []

    def catch(_conn: Any, _cursor: Any, statement: str, params: Any, *_: Any) -> None:
        caught.append((statement, params))

    event.listen(db.engine, "before_cursor_execute", catch)
    try:
        with db.read() as conn:
            page = list_tracesets(
                conn, workspace="w", where=FILTERS[column], limit=20, before_seq=None
            )
    finally:
        event.remove(db.engine, "before_cursor_execute", catch)
    assert len(page) == 20
    statement, params = next((s, p) for s, p in caught if "FROM tracesets" in s)
    with db.read() as conn:
        if db.is_sqlite:
            rows = conn.exec_driver_sql("EXPLAIN QUERY PLAN " + statement, params).all()
            plan = "\n".join(row[3] for row in rows)
        else:
            # A few hundred rows fit one page, where a scan costs less than any index: the
            # question is whether the planner can use the partial index for the filter.
            conn.exec_driver_sql("SET LOCAL enable_seqscan = off")
            rows = conn.exec_driver_sql("EXPLAIN " + statement, params).all()
            plan = "\n".join(row[0] for row in rows)
    assert f"ix_tracesets_workspace_{column}_seq" in plan, plan
