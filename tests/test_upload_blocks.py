"""An upload's blocks are hashed and written in order, however many its worker threads
have at once and whichever thread takes which block."""

from __future__ import annotations

import asyncio
import concurrent.futures
import hashlib
import random
import threading
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from tracesets.problems import InvalidRequest
from tracesets.storage import local, receive
from tracesets.storage.signing import URLSigner
from tracesets.storage.sink import Sink


def test_blocks_taken_by_racing_threads_land_in_order(tmp_path: Path) -> None:
    rng = random.Random(7)
    blocks = [[rng.randbytes(rng.randrange(1, 70_000)) for _ in range(3)] for _ in range(40)]
    sink = Sink(tmp_path / "upload.part")
    try:
        for block in blocks:
            sink.queue(block)
        calls = [sink.hash_next, sink.write_next] * len(blocks)
        rng.shuffle(calls)
        with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
            for job in [pool.submit(call) for call in calls]:
                job.result()
        sink.finish(tmp_path / "upload.bin")
    except BaseException:
        sink.discard()
        raise
    expected = b"".join(b"".join(block) for block in blocks)
    assert (tmp_path / "upload.bin").read_bytes() == expected
    assert sink.digest.hexdigest() == hashlib.sha256(expected).hexdigest()


def test_a_lone_upload_queues_two_blocks_and_many_keep_to_the_budget() -> None:
    for receiving in range(1, 200):
        block, depth = receive._pipeline(receiving)
        assert block >= receive._MIN_BLOCK
        assert depth in (1, 2)
        held = block * (depth + 1)  # the block filling and the queued ones
        assert held <= max(2 * receive._MIN_BLOCK, receive._HELD_BUDGET // receiving)
    assert receive._pipeline(1)[1] == 2
    assert receive._pipeline(8)[1] == 1


async def _chunks(data: bytes, size: int) -> AsyncIterator[bytes]:
    for start in range(0, len(data), size):
        yield data[start : start + size]
        await asyncio.sleep(0)


def _stored_whole(tmp_path: Path, data: bytes, chunk: int) -> None:
    digest = hashlib.sha256(data).hexdigest()
    store = local.LocalBlobStore(tmp_path, URLSigner(b"k" * 32))
    received = asyncio.run(
        store.receiver.receive("t/0", _chunks(data, chunk), size=len(data), sha256=digest)
    )
    assert (received.size, received.sha256) == (len(data), digest)
    assert store.path("t/0", digest).read_bytes() == data
    assert list(store.tmp.iterdir()) == []


@pytest.mark.parametrize("chunk", [1, 4_096, 100_003, 1_000_000])
def test_a_streamed_upload_is_stored_whole_under_its_digest(tmp_path: Path, chunk: int) -> None:
    _stored_whole(
        tmp_path,
        random.Random(chunk).randbytes(5 * 1024 * 1024 + 17 if chunk > 1 else 300_000),
        chunk,
    )


def test_a_wrong_digest_leaves_nothing(tmp_path: Path) -> None:
    data = random.Random(3).randbytes(6 * 1024 * 1024)
    store = local.LocalBlobStore(tmp_path, URLSigner(b"k" * 32))
    with pytest.raises(InvalidRequest):
        asyncio.run(
            store.receiver.receive("t/0", _chunks(data, 65_536), size=len(data), sha256="0" * 64)
        )
    assert list(store.tmp.iterdir()) == []
    assert not (store.blobs / "t").exists() or list((store.blobs / "t").iterdir()) == []


@pytest.mark.parametrize(
    "length",
    [0, 1, 16 * 1024, receive._INLINE_BYTES, receive._INLINE_BYTES + 1, receive._MIN_BLOCK],
)
@pytest.mark.parametrize("chunk", [1_000, 65_536])
def test_a_small_body_is_stored_whole_on_either_side_of_the_inline_bound(
    tmp_path: Path, length: int, chunk: int
) -> None:
    """At most ``_INLINE_BYTES``, hashed on the loop and written by the placing thread;
    past it, by the worker threads: the same bytes in place either way."""
    _stored_whole(tmp_path, random.Random(length).randbytes(length), chunk)


@pytest.mark.parametrize("length", [100, receive._INLINE_BYTES])
def test_a_small_body_with_a_wrong_digest_leaves_nothing(tmp_path: Path, length: int) -> None:
    data = random.Random(length).randbytes(length)
    store = local.LocalBlobStore(tmp_path, URLSigner(b"k" * 32))
    with pytest.raises(InvalidRequest):
        asyncio.run(
            store.receiver.receive("t/0", _chunks(data, 4_096), size=len(data), sha256="0" * 64)
        )
    assert list(store.tmp.iterdir()) == []
    assert not (store.blobs / "t").exists() or list((store.blobs / "t").iterdir()) == []


def _recorded_by(
    store: local.LocalBlobStore, calls: list[tuple[str, bool]], outcome: object
) -> Callable[[str], concurrent.futures.Future[object]]:
    """A ``record`` that notes its digest and whether the bytes were in place by then,
    and answers ``outcome`` (raised if an exception) from a thread of its own, as the
    group commit does."""

    def record(sha256: str) -> concurrent.futures.Future[object]:
        calls.append((sha256, store.path("t/0", sha256).exists()))
        done: concurrent.futures.Future[object] = concurrent.futures.Future()

        def answer() -> None:
            if isinstance(outcome, BaseException):
                done.set_exception(outcome)
            else:
                done.set_result(outcome)

        threading.Thread(target=answer).start()
        return done

    return record


@pytest.mark.parametrize("length", [100, receive._MIN_BLOCK * 3])
def test_the_bytes_are_recorded_once_in_place_and_the_record_answers(
    tmp_path: Path, length: int
) -> None:
    data = random.Random(length).randbytes(length)
    digest = hashlib.sha256(data).hexdigest()
    store = local.LocalBlobStore(tmp_path, URLSigner(b"k" * 32))
    calls: list[tuple[str, bool]] = []
    received, recorded = asyncio.run(
        store.receiver.receive_and_record(
            "t/0",
            _chunks(data, 65_536),
            size=length,
            sha256=digest,
            record=_recorded_by(store, calls, ("pending", digest)),
        )
    )
    assert (received.sha256, recorded) == (digest, ("pending", digest))
    assert calls == [(digest, True)]
    assert list(store.tmp.iterdir()) == []


def test_a_record_that_fails_fails_the_upload(tmp_path: Path) -> None:
    data = b"x" * 100
    store = local.LocalBlobStore(tmp_path, URLSigner(b"k" * 32))
    calls: list[tuple[str, bool]] = []
    with pytest.raises(OSError, match="database is locked"):
        asyncio.run(
            store.receiver.receive_and_record(
                "t/0",
                _chunks(data, 10),
                size=len(data),
                sha256=None,
                record=_recorded_by(store, calls, OSError("database is locked")),
            )
        )
    assert len(calls) == 1
    assert list(store.tmp.iterdir()) == []


def test_bytes_refused_are_never_recorded(tmp_path: Path) -> None:
    data = b"x" * 100
    store = local.LocalBlobStore(tmp_path, URLSigner(b"k" * 32))
    calls: list[tuple[str, bool]] = []
    with pytest.raises(InvalidRequest):
        asyncio.run(
            store.receiver.receive_and_record(
                "t/0",
                _chunks(data, 10),
                size=len(data),
                sha256="0" * 64,
                record=_recorded_by(store, calls, None),
            )
        )
    assert calls == []
    assert list(store.tmp.iterdir()) == []


def test_a_put_left_while_its_record_commits_leaves_the_bytes_in_place(tmp_path: Path) -> None:
    """The client went away: the request stops waiting, the record still ends (its answer
    goes nowhere), and the bytes stay under their name, nothing half-written."""
    data = b"y" * 1000
    digest = hashlib.sha256(data).hexdigest()
    store = local.LocalBlobStore(tmp_path, URLSigner(b"k" * 32))
    pending: list[concurrent.futures.Future[object]] = []

    def record(sha256: str) -> concurrent.futures.Future[object]:
        pending.append(concurrent.futures.Future())
        return pending[-1]

    async def leave() -> None:
        upload = asyncio.create_task(
            store.receiver.receive_and_record(
                "t/0", _chunks(data, 100), size=len(data), sha256=digest, record=record
            )
        )
        while not pending:
            await asyncio.sleep(0.001)
        upload.cancel()
        with pytest.raises(asyncio.CancelledError):
            await upload
        pending[0].set_result(("pending", digest))  # the commit ends after all

    asyncio.run(leave())
    assert store.path("t/0", digest).read_bytes() == data
    assert list(store.tmp.iterdir()) == []
