"""What the database does with a statement: the run's own database, the statements a call
sends, their plans and the indexes' definitions, on SQLite and on PostgreSQL."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event, text

from tests.server import own_database
from tracesets.db.engine import Database, sqlite_url


def run_database(tmp_path_factory: pytest.TempPathFactory, label: str) -> Database:
    """A new, migrated database on the run's backend: a PostgreSQL database of its own in
    the scaled pass, else a SQLite file."""
    url = os.environ.get("TRACESETS_TEST_DATABASE_URL", "")
    if url.startswith("postgresql"):
        url = own_database(url)
    else:
        folder: Path = tmp_path_factory.mktemp(label)
        url = sqlite_url(folder)
    database = Database(url)
    database.migrate()
    return database


@contextmanager
def sent(db: Database) -> Iterator[list[tuple[str, Any]]]:
    """The statements (with their parameters) sent while the block runs."""
    caught: list[tuple[str, Any]] = []

    def catch(_conn: Any, _cursor: Any, statement: str, params: Any, *_: Any) -> None:
        caught.append((statement, params))

    event.listen(db.engine, "before_cursor_execute", catch)
    try:
        yield caught
    finally:
        event.remove(db.engine, "before_cursor_execute", catch)


def plan_of(db: Database, statement: str, params: Any) -> str:
    """The plan of ``statement``, one line per step. On PostgreSQL sequential scans are
    off: a few hundred rows fit one page, where a scan costs less than any index, and the
    question is whether the planner can use the index at all."""
    with db.read() as conn:
        if db.is_sqlite:
            rows = conn.exec_driver_sql("EXPLAIN QUERY PLAN " + statement, params).all()
            return "\n".join(str(row[-1]) for row in rows)
        conn.exec_driver_sql("SET LOCAL enable_seqscan = off")
        rows = conn.exec_driver_sql("EXPLAIN " + statement, params).all()
        return "\n".join(row[0] for row in rows)


def assert_partial_on(db: Database, index: str, column: str) -> None:
    """``index`` holds only the rows where ``column`` is known."""
    if db.is_sqlite:
        query = "SELECT sql FROM sqlite_master WHERE type = 'index' AND name = :name"
    else:
        query = "SELECT indexdef FROM pg_indexes WHERE indexname = :name"
    with db.read() as conn:
        definition: str = conn.execute(text(query), {"name": index}).scalar_one()
    words = " ".join(definition.replace("(", " ").replace(")", " ").split())
    assert words.endswith(f"WHERE {column} IS NOT NULL"), definition
