"""Group commit for callers on an event loop: the batch runs on the loop, its commit on
a thread.

Under many clients the group-commit thread ran each batch of upload-url's inserts while
the event loop ran the requests, and each SQLite statement hands Python's GIL from one
thread to the other and back (SQLite runs without it): on two cores a batch of eight
inserts spent about 3 ms waiting for 1 ms of work (bench/README). A ``LoopCommit`` runs
what its loop's callers queued in one turn of the loop on the loop itself, in a write
transaction begun there (tens of microseconds a request, as the checks before them),
and hands only the commit, SQLite's fsync, to a thread: one handoff a batch. The loop
never waits for the disk, nor for another writer: when a thread of this process holds
the write lock, the committer thread waits for it and the batch then runs on the loop;
when another process holds SQLite's lock, the batch goes to the group-commit thread,
which waits its turn as before. Each caller's work has its own savepoint, as there.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from concurrent.futures import Executor
from contextlib import suppress
from dataclasses import dataclass
from functools import partial
from typing import TypeVar

from sqlalchemy import Connection, RootTransaction

from tracesets.db.group_commit import GroupCommit, Outcome, Queued, run_batch, settle, starts

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class HeldWrite:
    """A write transaction begun on the loop and the write lock it holds, until
    ``commit`` or ``rollback`` (from any thread) ends both."""

    connection: Connection
    transaction: RootTransaction
    release: Callable[[], None]

    def commit(self) -> None:
        try:
            self.transaction.commit()
        except BaseException:
            # SQLite may keep the transaction open (a deferred constraint failed) where
            # SQLAlchemy has let go of it: end it on the driver, or the next BEGIN fails.
            driver = self.connection.connection.driver_connection
            with suppress(Exception):  # the commit's own error is the one raised
                driver.rollback()  # type: ignore[union-attr]
                self.connection.rollback()
            raise
        finally:
            self.release()

    def rollback(self) -> None:
        try:
            self.transaction.rollback()
        finally:
            self.release()


class LoopCommit:
    """One event loop's batches: queued in one turn, run on the loop, committed on
    ``committer`` (a single thread, shared with no other work)."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        lock: threading.Lock,
        begin: Callable[[], HeldWrite | None],
        fallback: GroupCommit,
        committer: Executor,
    ) -> None:
        self.loop = loop
        self._lock = lock  # this process's one writer; ``begin`` needs it held
        self._begin = begin
        self._fallback = fallback
        self._committer = committer
        self._queued: list[Queued] = []
        self._busy = False  # a commit, or a wait for the lock, is under way

    def submit(self, work: Callable[[Connection], T]) -> asyncio.Future[T]:
        """Queue ``work``; its future holds the result once committed. Called on the loop."""
        done: asyncio.Future[T] = self.loop.create_future()
        if not self._queued and not self._busy:
            self.loop.call_soon(self._run)  # after the callers ready in this turn
        self._queued.append((work, done))
        return done

    def _run(self) -> None:
        if self._lock.acquire(blocking=False):
            self._run_locked()
            return
        # A thread of this process is writing (an inspection's claim, a token): it holds
        # the lock for one short transaction. Handing the batch to the group-commit thread
        # would queue the loop's next batches behind it too, each statement trading the
        # GIL with the loop; the committer thread waits for the lock instead.
        self._busy = True
        self._committer.submit(self._when_free)

    def _when_free(self) -> None:
        """On the committer thread: wait until the lock is let go, then try again on the
        loop (the lock itself never passes between threads)."""
        with self._lock:
            pass
        with suppress(RuntimeError):  # the loop has closed: nobody is left to answer
            self.loop.call_soon_threadsafe(self._retry)

    def _retry(self) -> None:
        self._busy = False
        self._run()

    def _run_locked(self) -> None:
        batch = [(work, done) for work, done in self._queued if starts(done)]
        self._queued = []
        if not batch:
            self._lock.release()
            return
        try:
            held = self._begin()
        except BaseException as failure:  # no transaction could be begun: nothing was written
            self._lock.release()
            settle([(done, None, failure) for _, done in batch])
            return
        if held is None:  # another process holds SQLite's lock: the group-commit thread waits
            self._lock.release()
            self._fallback.hand(batch)
            return
        try:
            outcomes = run_batch(held.connection, batch)
        except BaseException as failure:  # a savepoint itself failed: nothing is kept
            held.rollback()
            settle([(done, None, failure) for _, done in batch])
            return
        self._busy = True
        committed = asyncio.wrap_future(self._committer.submit(held.commit), loop=self.loop)
        committed.add_done_callback(partial(self._committed, outcomes))

    def _committed(self, outcomes: list[Outcome], committed: asyncio.Future[None]) -> None:
        self._busy = False
        failure = asyncio.CancelledError() if committed.cancelled() else committed.exception()
        if failure is not None:  # the commit failed: nothing of the batch was written
            outcomes = [(done, None, failure) for done, _, _ in outcomes]
        settle(outcomes)
        if self._queued:  # queued while the commit ran: their turn now
            self._run()
