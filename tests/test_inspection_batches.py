"""The inspection queue claims its next batch while the pool reads the last files of the
one before: the pool is never left idle for a batch's record and the next claim, and a
process claims no more than that ahead of what it reads."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, cast

import pytest

from tracesets.db.engine import Database
from tracesets.db.inspection_files import Claim
from tracesets.inspection import ByteSource
from tracesets.inspection.source import BytesSource
from tracesets.service import batches
from tracesets.service.batches import POOL_TASK_FILES, TAIL_TASKS
from tracesets.service.inspections import MAX_BATCH_FILES, InspectionQueue
from tracesets.storage.base import BlobStore

TRACE = b'{"traceEvents": []}'
PROCESSES = 2
WAIT = 30.0  # seconds: a bound on a hang, never a stand-in for a wait that passes


class Store:
    """The part of a local store the queue opens files with: every file the same trace."""

    remote = False

    def open_source(self, key: str, *, sha256: str, size: int | None = None) -> ByteSource:
        return BytesSource(TRACE)


class HeldPool:
    """A pool whose tasks run only when the test lets them, one at a time, in order."""

    def __init__(self) -> None:
        self.tasks: list[tuple[Future[Any], Callable[[], Any]]] = []
        self.submitted = threading.Condition()

    def submit(self, fn: Callable[..., Any], *args: Any) -> Future[Any]:
        future: Future[Any] = Future()
        with self.submitted:
            self.tasks.append((future, lambda: fn(*args)))
            self.submitted.notify_all()
        return future

    def run(self, count: int) -> None:
        """Answer the first ``count`` tasks not yet answered."""
        for future, task in [t for t in self.tasks if not t[0].done()][:count]:
            future.set_result(task())

    def until_submitted(self, count: int) -> None:
        with self.submitted:
            assert self.submitted.wait_for(lambda: len(self.tasks) >= count, WAIT)


def batch(first: int) -> list[Claim]:
    return [
        Claim(1, idx, 1, "ts", f"rank-{idx}.json", len(TRACE), "0" * 64)
        for idx in range(first, first + MAX_BATCH_FILES)
    ]


def test_the_next_batch_is_claimed_while_the_pool_reads_the_last_tasks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pool = HeldPool()
    monkeypatch.setattr(batches, "reading_pool", lambda processes: pool)
    queue = InspectionQueue(cast(Database, None), cast(BlobStore, Store()), processes=PROCESSES)
    first, second = batch(0), batch(MAX_BATCH_FILES)
    to_claim = [second]
    claimed = threading.Event()
    unread_when_claimed: list[int] = []
    recorded: list[list[str]] = []
    tasks_when_recorded: list[int] = []

    def claim_more() -> list[Claim] | None:
        unread_when_claimed.append(sum(not future.done() for future, _ in pool.tasks))
        claimed.set()
        return to_claim.pop() if to_claim else None

    def record(outcomes: list[tuple[Claim, str, str]]) -> None:
        assert all(status == "done" for _, status, _ in outcomes)
        recorded.append([claim.name for claim, _, _ in outcomes])
        tasks_when_recorded.append(len(pool.tasks))

    queue._claim_more = claim_more  # type: ignore[method-assign]
    queue._record = record  # type: ignore[method-assign]
    inspecting = threading.Thread(target=queue._inspect, args=(first,))
    inspecting.start()
    try:
        tasks_a_batch = MAX_BATCH_FILES // POOL_TASK_FILES
        tail = TAIL_TASKS * PROCESSES  # tasks left when the next batch is claimed
        pool.until_submitted(tasks_a_batch)
        for _ in range(tasks_a_batch - tail):
            assert not claimed.is_set(), "claimed while the pool had more than its tail"
            pool.run(1)
        assert claimed.wait(WAIT)
        assert unread_when_claimed == [tail]  # the pool still busy with the first batch
        # The second batch goes to the pool before the first's record waits for its tail.
        pool.until_submitted(2 * tasks_a_batch)
        assert recorded == []
        pool.run(len(pool.tasks))
    finally:
        pool.run(len(pool.tasks))  # a failed assertion must not leave the thread waiting
        inspecting.join(WAIT)
    assert not inspecting.is_alive()
    assert recorded == [[c.name for c in first], [c.name for c in second]]
    assert tasks_when_recorded[0] == 2 * tasks_a_batch
    assert len(unread_when_claimed) == 2  # after the second batch, nothing more to claim
    assert queue._held == []
