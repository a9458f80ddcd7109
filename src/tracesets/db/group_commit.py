"""Group commit for SQLite: many small write transactions, one fsync.

With ``synchronous=FULL`` every commit waits for the disk, and SQLite has one writer
at a time, so small writes from many requests queue behind each other's fsync. A
``GroupCommit`` runs queued units of work in one transaction, each in its own
savepoint (one that fails is rolled back alone and gets its own exception), then
commits once. Every caller still returns only after its work is on disk: durability
is the same, the disk is asked once per batch instead of once per request.

The savepoints are the driver's own statements, not SQLAlchemy's nested transactions:
SQLAlchemy's bookkeeping for a savepoint and its release cost more than the insert an
upload-url request makes. Callers on an event loop have their work run on the loop
(``LoopCommit``) and come here only when another writer holds the lock; they are then
answered once per batch (one ``call_soon_threadsafe`` for all of that loop's futures).
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections import defaultdict
from collections.abc import Callable
from concurrent.futures import Future
from contextlib import AbstractContextManager, suppress
from typing import Any, Final, TypeVar

from sqlalchemy import Connection

T = TypeVar("T")

MAX_BATCH: Final = 64

#: Where a unit of work's outcome goes: a thread's future, or a future of an event loop.
Done = Future[Any] | asyncio.Future[Any]
#: A unit of work's outcome: its future, its result, the exception it raised.
Outcome = tuple[Done, Any, BaseException | None]
#: A unit of work and where its outcome goes.
Queued = tuple[Callable[[Connection], Any], Done]


def settle(outcomes: list[Outcome]) -> None:
    """Hand each outcome to its future (on the future's own event loop)."""
    for done, result, failure in outcomes:
        if done.cancelled():  # the caller stopped waiting; the work was done already
            continue
        if failure is not None:
            done.set_exception(failure)
        else:
            done.set_result(result)


def starts(done: Done) -> bool:
    """Whether a queued unit of work is still wanted (its future was not cancelled)."""
    if isinstance(done, Future):
        return done.set_running_or_notify_cancel()
    return not done.cancelled()


def run_batch(conn: Connection, batch: list[Queued]) -> list[Outcome]:
    """Run each unit of work in ``conn``'s open write transaction, each in a savepoint:
    one that raises is rolled back alone, and its exception is its outcome."""
    driver = conn.connection.driver_connection
    assert driver is not None
    outcomes: list[Outcome] = []
    for work, done in batch:
        driver.execute("SAVEPOINT group_commit")
        try:
            result = work(conn)
        except BaseException as failure:  # handed to its caller, not raised here
            driver.execute("ROLLBACK TO group_commit")
            driver.execute("RELEASE group_commit")
            outcomes.append((done, None, failure))
        else:
            driver.execute("RELEASE group_commit")
            outcomes.append((done, result, None))
    return outcomes


class GroupCommit:
    def __init__(self, transaction: Callable[[], AbstractContextManager[Connection]]) -> None:
        self._transaction = transaction
        self._queue: queue.SimpleQueue[Queued] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._start = threading.Lock()

    def run(self, work: Callable[[Connection], T]) -> T:
        """Run ``work`` in a write transaction shared with others; return once committed."""
        return self.submit(work).result()

    def submit(self, work: Callable[[Connection], T]) -> Future[T]:
        """Queue ``work``; the future holds its result once committed. A future cancelled
        before its batch starts is skipped: its work never runs."""
        done: Future[T] = Future()
        self.hand([(work, done)])
        return done

    def hand(self, batch: list[Queued]) -> None:
        """Queue work whose futures the caller made (an event loop's, ``LoopCommit``'s)."""
        for queued in batch:
            self._queue.put(queued)
        self._ensure_thread()

    def _ensure_thread(self) -> None:
        if self._thread is not None:
            return
        with self._start:
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="group-commit", daemon=True)
                self._thread.start()

    def _loop(self) -> None:
        while True:
            batch = [self._queue.get()]
            while len(batch) < MAX_BATCH:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            self._answer(self._commit(batch))

    def _commit(self, batch: list[Queued]) -> list[Outcome]:
        batch = [(work, done) for work, done in batch if starts(done)]
        if not batch:
            return []
        try:
            with self._transaction() as conn:
                return run_batch(conn, batch)
        except BaseException as failure:  # the commit itself failed: nothing was written
            return [(done, None, failure) for _, done in batch]

    @staticmethod
    def _answer(outcomes: list[Outcome]) -> None:
        """Settle thread futures here, and each event loop's futures in one call on it."""
        by_loop: dict[asyncio.AbstractEventLoop, list[Outcome]] = defaultdict(list)
        for outcome in outcomes:
            done = outcome[0]
            if isinstance(done, Future):
                settle([outcome])
            else:
                by_loop[done.get_loop()].append(outcome)
        for loop, settled in by_loop.items():
            with suppress(RuntimeError):  # a closed loop: nobody waits for these any more
                loop.call_soon_threadsafe(settle, settled)
