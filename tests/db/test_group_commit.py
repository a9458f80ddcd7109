"""Group commit: many writers' work in one transaction, each in its own savepoint."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from sqlalchemy import Connection, text

from tracesets.db.engine import Database


@pytest.fixture
def db(tmp_path: Path) -> Database:
    database = Database(f"sqlite:///{tmp_path / 'g.db'}")
    with database.write() as conn:
        conn.execute(text("CREATE TABLE t (k INTEGER PRIMARY KEY)"))
    return database


def count(db: Database) -> int:
    with db.read() as conn:
        return int(conn.execute(text("SELECT count(*) FROM t")).scalar_one())


def test_every_writer_gets_its_own_result_once_committed(db: Database) -> None:
    def insert(k: int) -> int:
        def work(conn: Connection) -> int:
            conn.execute(text("INSERT INTO t (k) VALUES (:k)"), {"k": k})
            return k * 2

        return db.write_soon(work)

    with ThreadPoolExecutor(32) as pool:
        assert list(pool.map(insert, range(500))) == [k * 2 for k in range(500)]
    assert count(db) == 500


def test_a_failing_writer_is_rolled_back_alone(db: Database) -> None:
    def insert(k: int) -> str:
        def work(conn: Connection) -> None:
            conn.execute(text("INSERT INTO t (k) VALUES (:k)"), {"k": k})
            if k % 3 == 0:
                raise ValueError(f"refused {k}")

        try:
            db.write_soon(work)
        except ValueError as refused:
            return str(refused)
        return "ok"

    with ThreadPoolExecutor(16) as pool:
        outcomes = list(pool.map(insert, range(300)))
    assert outcomes == [f"refused {k}" if k % 3 == 0 else "ok" for k in range(300)]
    with db.read() as conn:
        kept = {row[0] for row in conn.execute(text("SELECT k FROM t"))}
    assert kept == {k for k in range(300) if k % 3}
