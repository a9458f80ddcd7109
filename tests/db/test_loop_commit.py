"""Writes from the event loop: run on the loop when the writer is free or once a thread of
this process has let go of it, committed on a thread before anyone is answered, and
handed to the group-commit thread while another process writes."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from sqlalchemy import Connection, text
from sqlalchemy.exc import IntegrityError

from tracesets.db.engine import Database


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "l.db"


@pytest.fixture
def db(path: Path) -> Iterator[Database]:
    database = Database(f"sqlite:///{path}")
    with database.write() as conn:
        conn.execute(text("CREATE TABLE t (k INTEGER PRIMARY KEY)"))
        conn.execute(
            text(
                "CREATE TABLE c (k INTEGER PRIMARY KEY, "
                "p INTEGER REFERENCES t(k) DEFERRABLE INITIALLY DEFERRED)"
            )
        )
    yield database
    database.dispose()


def kept(path: Path, table: str = "t") -> set[int]:
    """The keys committed, as another connection (another process) reads them."""
    with sqlite3.connect(path) as other:
        return {row[0] for row in other.execute(f"SELECT k FROM {table}")}


def inserting(k: int, threads: list[int], table: str = "t") -> Callable[[Connection], int]:
    def work(conn: Connection) -> int:
        threads.append(threading.get_ident())
        conn.execute(text(f"INSERT INTO {table} (k) VALUES (:k)"), {"k": k})
        return k

    return work


def test_loop_writes_run_on_the_loop_and_are_on_disk_when_answered(
    db: Database, path: Path
) -> None:
    threads: list[int] = []

    async def main() -> tuple[int, list[int]]:
        async def one(k: int) -> int:
            done = await db.write_async(inserting(k, threads))
            assert k in kept(path)  # committed before the caller hears of it
            return done

        return threading.get_ident(), list(await asyncio.gather(*(one(k) for k in range(200))))

    loop_thread, answers = asyncio.run(main())
    assert answers == list(range(200))
    assert set(threads) == {loop_thread}
    assert kept(path) == set(range(200))


def test_a_failed_commit_fails_its_whole_batch_and_the_next_one_writes(
    db: Database, path: Path
) -> None:
    """A deferred foreign key is checked at COMMIT: the batch it is in fails as one,
    each caller hears so, nothing of it is kept, and the loop's next batch commits."""
    threads: list[int] = []

    async def main() -> list[object]:
        batch = await asyncio.gather(
            db.write_async(inserting(1, threads)),
            db.write_async(inserting(2, threads, table="c")),  # c.p is NULL: allowed
            db.write_async(lambda conn: conn.execute(text("INSERT INTO c (k, p) VALUES (3, 999)"))),
            return_exceptions=True,
        )
        after = await db.write_async(inserting(4, threads))
        return [*batch, after]

    first, second, orphan, after = asyncio.run(main())
    assert isinstance(first, IntegrityError)
    assert isinstance(second, IntegrityError)
    assert isinstance(orphan, IntegrityError)
    assert after == 4
    assert kept(path) == {4}
    assert kept(path, "c") == set()


def test_another_process_writing_sends_the_batch_to_the_group_commit_thread(
    db: Database, path: Path
) -> None:
    """The loop does not wait for SQLite's lock: the work waits on the group-commit
    thread, and the loop's own writes resume once the lock is free."""
    other = sqlite3.connect(path, isolation_level=None)
    threads: list[int] = []

    async def main() -> tuple[int, int, int]:
        other.execute("BEGIN IMMEDIATE")  # another process is writing
        waiting = asyncio.ensure_future(db.write_async(inserting(1, threads)))
        for _ in range(3):  # the task queues its work; the loop's next turn runs the batch
            await asyncio.sleep(0)
        assert not waiting.done()
        assert threads == [] or threads[0] != threading.get_ident()
        other.execute("COMMIT")
        handed = await waiting
        resumed = await db.write_async(inserting(2, threads))
        return threading.get_ident(), handed, resumed

    try:
        loop_thread, handed, resumed = asyncio.run(main())
    finally:
        other.close()
    assert (handed, resumed) == (1, 2)
    assert threads[0] != loop_thread  # the refused batch ran on the group-commit thread
    assert threads[1] == loop_thread  # and the next one on the loop again
    assert kept(path) == {1, 2}


def test_a_thread_of_this_process_writing_delays_the_batch_which_then_runs_on_the_loop(
    db: Database, path: Path
) -> None:
    """The loop runs on while another thread holds the writer; the batch then runs on the
    loop, not on the group-commit thread behind that writer."""
    threads: list[int] = []
    holding, release = threading.Event(), threading.Event()

    def other_thread() -> None:
        with db.write() as conn:
            conn.execute(text("INSERT INTO t (k) VALUES (1)"))
            holding.set()
            release.wait()

    writer = threading.Thread(target=other_thread)
    writer.start()
    holding.wait()

    async def main() -> tuple[int, int]:
        waiting = asyncio.ensure_future(db.write_async(inserting(2, threads)))
        for _ in range(3):  # the task queues its work; the loop's next turn finds the lock held
            await asyncio.sleep(0)
        assert not waiting.done()
        release.set()
        return threading.get_ident(), await waiting

    try:
        loop_thread, answer = asyncio.run(main())
    finally:
        release.set()
        writer.join()
    assert answer == 2
    assert threads == [loop_thread]
    assert kept(path) == {1, 2}


def test_a_second_live_loop_writes_through_the_group_commit_thread(
    db: Database, path: Path
) -> None:
    threads: list[int] = []
    first = asyncio.new_event_loop()
    try:
        assert first.run_until_complete(db.write_async(inserting(1, threads))) == 1
        assert asyncio.run(db.write_async(inserting(2, threads))) == 2
        assert first.run_until_complete(db.write_async(inserting(3, threads))) == 3
    finally:
        first.close()
    here = threading.get_ident()
    assert [ident == here for ident in threads] == [True, False, True]
    assert kept(path) == {1, 2, 3}
