"""Group commit: many writers' work in one transaction, each in its own savepoint."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
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


def test_writers_on_an_event_loop_get_their_own_results_and_failures(db: Database) -> None:
    """``write_async`` answers a loop's callers once per batch: each gets its own outcome."""

    def work_for(k: int) -> Callable[[Connection], int]:
        def work(conn: Connection) -> int:
            conn.execute(text("INSERT INTO t (k) VALUES (:k)"), {"k": k})
            if k % 4 == 0:
                raise ValueError(f"refused {k}")
            return k * 2

        return work

    async def main() -> list[int | str]:
        async def one(k: int) -> int | str:
            try:
                return await db.write_async(work_for(k))
            except ValueError as refused:
                return str(refused)

        return list(await asyncio.gather(*(one(k) for k in range(400))))

    outcomes = asyncio.run(main())
    assert outcomes == [f"refused {k}" if k % 4 == 0 else k * 2 for k in range(400)]
    with db.read() as conn:
        kept = {row[0] for row in conn.execute(text("SELECT k FROM t"))}
    assert kept == {k for k in range(400) if k % 4}


def test_a_loop_writer_cancelled_before_its_batch_never_writes(db: Database) -> None:
    """A caller that stops waiting before its batch starts leaves nothing behind."""
    group = db._group
    assert group is not None
    entered, release = threading.Event(), threading.Event()

    def blocker(conn: Connection) -> None:
        entered.set()
        release.wait(timeout=30)

    def insert(conn: Connection) -> None:
        conn.execute(text("INSERT INTO t (k) VALUES (1)"))

    async def main() -> None:
        held = group.submit(blocker)  # the group-commit thread is busy with this batch
        await asyncio.to_thread(entered.wait, 30)
        waiting = asyncio.ensure_future(db.write_async(insert))
        await asyncio.sleep(0)  # let it queue its work
        waiting.cancel()
        release.set()
        await asyncio.wrap_future(held)
        await db.write_async(lambda conn: None)  # a later batch: the cancelled one is behind us
        assert waiting.cancelled()

    asyncio.run(main())
    assert count(db) == 0
