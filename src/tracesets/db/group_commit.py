"""Group commit for SQLite: many small write transactions, one fsync.

With ``synchronous=FULL`` every commit waits for the disk, and SQLite has one writer
at a time, so small writes from many requests queue behind each other's fsync. A
``GroupCommit`` runs queued units of work in one transaction, each in its own
savepoint (one that fails is rolled back alone and gets its own exception), then
commits once. Every caller still returns only after its work is on disk: durability
is the same, the disk is asked once per batch instead of once per request.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from contextlib import AbstractContextManager
from typing import Any, Final, TypeVar

from sqlalchemy import Connection

T = TypeVar("T")

MAX_BATCH: Final = 64


class GroupCommit:
    def __init__(self, transaction: Callable[[], AbstractContextManager[Connection]]) -> None:
        self._transaction = transaction
        self._queue: queue.SimpleQueue[tuple[Callable[[Connection], Any], Future[Any]]] = (
            queue.SimpleQueue()
        )
        self._thread: threading.Thread | None = None
        self._start = threading.Lock()

    def run(self, work: Callable[[Connection], T]) -> T:
        """Run ``work`` in a write transaction shared with others; return once committed."""
        return self.submit(work).result()

    def submit(self, work: Callable[[Connection], T]) -> Future[T]:
        """Queue ``work``; the future holds its result once committed. A future cancelled
        before its batch starts is skipped: its work never runs."""
        done: Future[T] = Future()
        self._queue.put((work, done))
        self._ensure_thread()
        return done

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
            self._commit(batch)

    def _commit(self, batch: list[tuple[Callable[[Connection], Any], Future[Any]]]) -> None:
        outcomes: list[tuple[Future[Any], Any, BaseException | None]] = []
        batch = [(work, done) for work, done in batch if done.set_running_or_notify_cancel()]
        if not batch:
            return
        try:
            with self._transaction() as conn:
                for work, done in batch:
                    savepoint = conn.begin_nested()
                    try:
                        result = work(conn)
                    except BaseException as failure:  # handed to its caller, not raised here
                        savepoint.rollback()
                        outcomes.append((done, None, failure))
                    else:
                        savepoint.commit()
                        outcomes.append((done, result, None))
        except BaseException as failure:  # the commit itself failed: nothing was written
            for _, done in batch:
                done.set_exception(failure)
            return
        for done, result, refused in outcomes:
            if refused is not None:
                done.set_exception(refused)
            else:
                done.set_result(result)
