"""The workload filters' indexes hold only the tracesets that declare the value, and a
filtered list still reads them: on SQLite, and on PostgreSQL in the scaled pass."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import insert, text

from tests.plans import assert_partial_on, plan_of, run_database, sent
from tracesets.db.engine import Database
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
    database = run_database(tmp_path_factory, "filter-indexes")
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


@pytest.mark.parametrize("column", SPARSE)
def test_a_filter_index_holds_only_rows_with_the_value(db: Database, column: str) -> None:
    assert_partial_on(db, f"ix_tracesets_workspace_{column}_seq", column)


@pytest.mark.parametrize("column", SPARSE)
def test_a_filtered_list_reads_its_own_index(db: Database, column: str) -> None:
    with sent(db) as caught, db.read() as conn:
        page = list_tracesets(conn, workspace="w", where=FILTERS[column], limit=20, before_seq=None)
    assert len(page) == 20
    statement, params = next((s, p) for s, p in caught if "FROM tracesets" in s)
    plan = plan_of(db, statement, params)
    assert f"ix_tracesets_workspace_{column}_seq" in plan, plan
