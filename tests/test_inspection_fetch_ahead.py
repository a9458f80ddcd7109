"""How far the inspection queue reads ahead of the file it inspects, and what it holds."""

from __future__ import annotations

import threading
from concurrent.futures import FIRST_COMPLETED, Future
from dataclasses import replace
from pathlib import Path
from typing import Any, cast

import pytest

from tracesets.db.engine import Database
from tracesets.db.inspection_files import Claim
from tracesets.inspection import ByteSource, SourceError
from tracesets.inspection.source import READ_ONCE_LIMIT, BytesSource, FileSource
from tracesets.service import fetching
from tracesets.service.fetching import FETCH_AHEAD, FETCH_AHEAD_BYTES, fetch_ahead, make_room
from tracesets.service.inspections import MAX_ATTEMPTS, InspectionQueue
from tracesets.storage.base import BlobStore

MiB = 1024 * 1024


def claims(count: int, size: int) -> list[Claim]:
    return [Claim(1, idx, 1, "ts", f"rank{idx}.json", size, "0" * 64) for idx in range(count)]


def ahead_at_each_step(batch: list[Claim]) -> list[list[Claim]]:
    """For each claim handed over, the claims started and not yet handed over, it included."""
    started: list[Claim] = []

    def fetch(claim: Claim) -> Future[ByteSource]:
        started.append(claim)
        done: Future[ByteSource] = Future()
        done.set_result(BytesSource(b""))
        return done

    steps = []
    for handed, (claim, future) in enumerate(fetch_ahead(batch, fetch)):
        assert claim is batch[handed] and future.done()
        steps.append(started[handed:])
    assert started == batch  # each claim fetched once, in order
    return steps


def test_small_files_read_whole_are_fetched_ahead_within_the_byte_budget() -> None:
    size = 2 * MiB
    steps = ahead_at_each_step(claims(16, size))
    assert len(steps) == 16
    assert all(sum(c.size for c in ahead) <= FETCH_AHEAD_BYTES for ahead in steps)
    assert len(steps[0]) == FETCH_AHEAD_BYTES // size  # still ahead, just not all at once


def test_tiny_files_are_fetched_ahead_up_to_the_file_count() -> None:
    steps = ahead_at_each_step(claims(16, 30_000))
    assert max(len(ahead) for ahead in steps) == FETCH_AHEAD


def test_files_streamed_rather_than_held_cost_no_budget() -> None:
    streamed = ahead_at_each_step(claims(3, READ_ONCE_LIMIT + 1))
    assert [len(ahead) for ahead in streamed] == [3, 2, 1]
    held = ahead_at_each_step(claims(3, READ_ONCE_LIMIT))
    assert [len(ahead) for ahead in held] == [FETCH_AHEAD_BYTES // READ_ONCE_LIMIT, 2, 1]


class OneFolder:
    """The part of a store the queue opens files with."""

    def __init__(self, source: ByteSource) -> None:
        self.source = source

    def open_source(self, key: str, *, sha256: str, size: int | None = None) -> ByteSource:
        return self.source


@pytest.mark.parametrize("local", [True, False])
def test_a_local_file_is_read_in_place_a_remote_small_one_whole(
    tmp_path: Path, local: bool
) -> None:
    path = tmp_path / "rank0.json"
    path.write_bytes(b"x" * 100_000)
    counted: list[tuple[int, int]] = []

    class Remote:
        size = 100_000

        def read(self, offset: int, length: int) -> bytes:
            counted.append((offset, length))
            return b"x" * length

    store: Any = OneFolder(FileSource(path) if local else Remote())
    queue = InspectionQueue(cast(Database, None), cast(BlobStore, store))
    [claim] = claims(1, 100_000)
    source = queue.reader.open(claim)
    assert source.read(10, 5) == b"xxxxx"
    assert source.read(0, 3) == b"xxx"
    if local:
        assert not isinstance(source, BytesSource)  # nothing held: each read from the file
    else:
        assert counted == [(0, 100_000)]  # one request for every later read


def test_files_sent_to_the_pool_hold_at_most_the_byte_budget_unread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Bytes sent to the pool wait in this process until a pool process reads them: the
    next file waits while those unread would pass FETCH_AHEAD_BYTES with it."""
    waited: list[list[str]] = []

    def wait(answers: list[Future[str]], return_when: str) -> None:
        assert return_when == FIRST_COMPLETED
        waited.append([str(a) for a in answers])
        answers[0].set_result("read")  # the oldest is read by a pool process

    monkeypatch.setattr(fetching, "wait", wait)
    sent: list[tuple[Claim, Future[str]]] = []
    for claim in claims(5, 3 * MiB):
        make_room(sent, claim.size)
        unread = [c.size for c, answer in sent if not answer.done()]
        assert not unread or sum(unread) + claim.size <= FETCH_AHEAD_BYTES
        sent.append((claim, Future()))
    assert len(waited) == 3  # from the third file on, one read first each time
    alone: list[tuple[Claim, Future[str]]] = []
    make_room(alone, 64 * MiB)  # one file is always let through


@pytest.mark.parametrize("remote", [True, False])
def test_a_remote_store_is_fetched_on_threads_a_local_one_where_it_is_read(
    remote: bool,
) -> None:
    """Each read of a remote store is a round trip, worth starting ahead on threads; a
    local file's opening is a system call, made on the reading thread when its turn
    comes. Either way every file is read, in order, and a failed opening fails its file."""
    opened_on: list[str] = []

    class Store(OneFolder):
        def open_source(self, key: str, *, sha256: str, size: int | None = None) -> ByteSource:
            opened_on.append(threading.current_thread().name)
            if key.endswith("/2"):
                raise SourceError("the store lost rank2.json")
            return self.source

    store: Any = Store(BytesSource(b'{"traceEvents": []}'))
    store.remote = remote
    queue = InspectionQueue(cast(Database, None), cast(BlobStore, store), processes=1)
    last_attempts = [replace(claim, attempts=MAX_ATTEMPTS) for claim in claims(4, 100)]
    # a failure is recorded, not retried
    outcomes = queue.reader.collect(queue.reader.start(last_attempts))
    assert [(claim.name, status) for claim, status, _ in outcomes] == [
        ("rank0.json", "done"),
        ("rank1.json", "done"),
        ("rank2.json", "failed"),
        ("rank3.json", "done"),
    ]
    assert "the store lost rank2.json" in outcomes[2][2]
    assert len(opened_on) == 4
    if remote:
        assert all(name.startswith("inspection-fetch") for name in opened_on)
    else:
        assert set(opened_on) == {threading.current_thread().name}
