"""Files fetched ahead while one is read: in order, a bounded number ahead, failures in turn."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from tracesets.inspection import ByteSource, BytesSource, SourceError
from tracesets.inspection.prefetch import read_ahead


class Store:
    """Files ``0`` to ``count - 1``, each ``b"file N"``; counts the files opened."""

    def __init__(self, count: int, broken: int | None = None) -> None:
        self.count = count
        self.broken = broken
        self.opened = 0
        self._lock = threading.Lock()

    def opener(self, number: int) -> Callable[[], ByteSource]:
        def open_source() -> ByteSource:
            with self._lock:
                self.opened += 1
            if number == self.broken:
                raise SourceError(f"file {number} could not be fetched")
            return BytesSource(f"file {number}".encode())

        return open_source

    def openers(self) -> list[Callable[[], ByteSource]]:
        return [self.opener(number) for number in range(self.count)]


def test_every_file_in_order_never_more_than_depth_ahead() -> None:
    store = Store(50)
    for number, source in enumerate(read_ahead(store.openers(), depth=4)):
        assert source.read(0, source.size) == f"file {number}".encode()
        assert store.opened <= number + 4
    assert store.opened == 50


def test_a_file_that_fails_fails_in_its_turn() -> None:
    store = Store(10, broken=3)
    got = []
    with pytest.raises(SourceError, match="file 3"):
        for source in read_ahead(store.openers(), depth=4):
            got.append(source.read(0, source.size))
    assert got == [b"file 0", b"file 1", b"file 2"]


def test_a_reader_that_stops_early_leaves_the_rest_unfetched() -> None:
    store = Store(100)
    sources = read_ahead(store.openers(), depth=4)
    next(sources)
    sources.close()
    assert store.opened <= 4
