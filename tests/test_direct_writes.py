"""Direct writes: every byte lands in order, whatever the pieces' sizes and alignment."""

from __future__ import annotations

import fcntl
import os
import random
from pathlib import Path

import pytest

from tracesets.storage.direct import ALIGN, CAPACITY, DirectWriter


def pieces(sizes: list[int], seed: int) -> list[bytes]:
    rng = random.Random(seed)
    return [rng.randbytes(size) for size in sizes]


@pytest.mark.parametrize(
    "blocks",
    [
        [[1]],
        [[ALIGN - 1], [1], [ALIGN + 1]],
        [[CAPACITY], [CAPACITY - 1, 2], [3 * CAPACITY + 7]],
        [[262_144, 262_144, 262_144], [262_144, 100_000], [0], [5]],
        [[ALIGN] * 5, [], [ALIGN * 2]],
    ],
)
def test_the_file_holds_every_byte_in_order(tmp_path: Path, blocks: list[list[int]]) -> None:
    path = tmp_path / "upload.part"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o640)
    sent = [pieces(sizes, seed) for seed, sizes in enumerate(blocks)]
    writer = DirectWriter.open(fd) or DirectWriter(fd)  # the logic alike where refused
    try:
        for block in sent:
            writer.write(block)
            assert writer.filled < ALIGN  # all but the tail is written as each block ends
        writer.finish()
        assert writer.filled == 0
    finally:
        writer.close()
        os.close(fd)
    assert path.read_bytes() == b"".join(b"".join(block) for block in sent)


def test_open_turns_direct_writes_on_or_says_it_cannot(tmp_path: Path) -> None:
    fd = os.open(tmp_path / "upload.part", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o640)
    try:
        writer = DirectWriter.open(fd)
        direct = bool(fcntl.fcntl(fd, fcntl.F_GETFL) & getattr(os, "O_DIRECT", 0))
        assert direct == (writer is not None)
        if writer is not None:
            writer.write([b"x" * (ALIGN + 3)])
            writer.finish()  # the tail goes through the page cache: direct writes are off
            assert not fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_DIRECT
            writer.close()
    finally:
        os.close(fd)
