"""The scanner's work is linear in its input, whatever the bytes: no growing prefix of
bytes that never parse is parsed again at every block read."""

from __future__ import annotations

import gzip
from typing import Any

import orjson
import pytest

from tracesets.analysis import analyze_file
from tracesets.analysis import decoding as decoding_module
from tracesets.analysis import events as events_module
from tracesets.inspection import BytesSource

#: Bytes handed to the parsers (orjson, msgspec) per byte of trace, at most.
WORK_PER_BYTE = 40


class TooMuchWork(BaseException):
    """Raised past the bound, through the scanner's own handling of ``Exception``."""


class Parsed:
    """The bytes handed to orjson and msgspec, stopping the scan past ``limit``."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.total = 0

    def add(self, data: bytes) -> None:
        self.total += len(data)
        if self.total > self.limit:
            raise TooMuchWork(f"{self.total:,} bytes parsed, past {self.limit:,}")


def _counted(monkeypatch: pytest.MonkeyPatch, parsed: Parsed) -> None:
    real_decoder = decoding_module._DECODER

    class CountingOrjson:
        JSONDecodeError = orjson.JSONDecodeError

        @staticmethod
        def loads(data: bytes) -> Any:
            parsed.add(data)
            return orjson.loads(data)

    class CountingDecoder:
        @staticmethod
        def decode(data: bytes) -> Any:
            parsed.add(data)
            return real_decoder.decode(data)

    monkeypatch.setattr(events_module, "orjson", CountingOrjson)
    monkeypatch.setattr(decoding_module, "_DECODER", CountingDecoder)


@pytest.mark.parametrize("terminated", [False, True], ids=["unterminated", "one-huge-event"])
def test_a_small_gzip_of_one_event_that_never_parses_costs_linear_work(
    monkeypatch: pytest.MonkeyPatch, terminated: bool
) -> None:
    # 16 MiB of "}, {" inside one string: a cut after every fourth byte, none between events
    string = b"}, {" * (4 * 1024 * 1024)
    trace = b'{"traceEvents": [{"name": "' + string + (b'"}]}' if terminated else b"")
    data = gzip.compress(trace, mtime=0)
    assert len(data) < 64 * 1024
    parsed = Parsed(WORK_PER_BYTE * len(trace))
    _counted(monkeypatch, parsed)
    (traced,) = analyze_file("rank-0.json.gz", BytesSource(data))
    if terminated:
        assert traced.analysis.problem is None and traced.analysis.events == 1
    else:
        assert traced.analysis.problem == (
            "the traceEvents array is cut short: the trace ends inside it"
        )
    assert 0 < parsed.total <= WORK_PER_BYTE * len(trace)


def test_events_longer_than_a_block_between_small_ones_are_read_in_linear_work(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    big = b'{"name": "' + b"}, {" * (256 * 1024) + b'", "ts": 1}'
    small = b'{"name": "a", "ts": 2}'
    items = [big if i % 3 == 0 else small for i in range(30)]
    trace = b'{"traceEvents": [' + b", ".join(items) + b"]}"
    parsed = Parsed(WORK_PER_BYTE * len(trace))
    _counted(monkeypatch, parsed)
    (traced,) = analyze_file("rank-0.json", BytesSource(trace))
    assert traced.analysis.problem is None and traced.analysis.events == 30
