"""The event scanner: batches of events from a stream, whatever the bytes look like."""

from __future__ import annotations

import io
import json
from typing import Any

import orjson
import pytest

from tracesets.analysis import events as events_module
from tracesets.analysis.events import EventsUnreadable, Outside, scan_events


def scan(data: bytes) -> tuple[list[Any], Outside]:
    seen: list[Any] = []
    outside = scan_events(io.BytesIO(data), seen.extend)
    return seen, outside


TRICKY = [
    {"name": "a}, {b", "ts": 1},
    {"name": 'é]},{"x": [1, 2]}', "args": {"list": [{"a": 1}, {"b": 2}]}},
    {"name": "ProfilerStep#1", "ts": 2, "nested": {"deep": [[{}], {}]}},
    {"name": "日本語", "ts": 3},
]


@pytest.mark.parametrize("block", [16, 64, 1 << 20])
@pytest.mark.parametrize("indent", [None, 2])
def test_events_are_read_whole_whatever_the_block_size(
    monkeypatch: pytest.MonkeyPatch, block: int, indent: int | None
) -> None:
    monkeypatch.setattr(events_module, "BLOCK", block)
    events = TRICKY * 50
    document = {"schemaVersion": 1, "traceEvents": events, "distributedInfo": {"rank": 3},
                "after": [{"x": 1}, {"y": "}, {"}]}  # fmt: skip
    seen, outside = scan(json.dumps(document, indent=indent, ensure_ascii=False).encode())
    assert seen == events
    assert outside.found and outside.complete
    assert b'"distributedInfo"' in outside.tail
    assert b'"schemaVersion"' in outside.head


def test_a_trace_cut_short_keeps_the_events_before_the_cut() -> None:
    data = json.dumps({"traceEvents": [{"n": i} for i in range(100)]}).encode()
    seen: list[Any] = []
    with pytest.raises(EventsUnreadable, match="cut short"):
        scan_events(io.BytesIO(data[: len(data) // 2]), seen.extend)
    assert 0 < len(seen) < 100
    assert seen == [{"n": i} for i in range(len(seen))]


@pytest.mark.parametrize(
    "data, message",
    [
        (b'{"traceEvents": {"a": 1}}', "not an array"),
        (b'{"traceEvents": [{"a": 1}, {"b": nope}]}', "not valid JSON"),
        (b'{"traceEvents": [{"a": 1}, {"b": ', "cut short"),
    ],
)
def test_bad_arrays_are_named(data: bytes, message: str) -> None:
    with pytest.raises(EventsUnreadable, match=message):
        scan(data)


def test_no_trace_events_is_not_found() -> None:
    seen, outside = scan(b'{"nodes": []}')
    assert (seen, outside.found) == ([], False)


@pytest.mark.parametrize(
    "ending, tail",
    [
        (b"]}", b"}"),
        (b"]  \n }\n", b"}\n"),
        (b'], "distributedInfo": {"rank": 1}}', b', "distributedInfo": {"rank": 1}}'),
        (b'] ,\n"after": [1, [2]], "x": "]"}', b',\n"after": [1, [2]], "x": "]"}'),
        (b"]", b""),
        (b"]  \n", b""),
    ],
)
def test_what_follows_the_array_is_kept_from_its_first_byte(ending: bytes, tail: bytes) -> None:
    """The tail starts where a parse of the whole rest would stop: at what follows the
    array, whitespace aside, whether the array is the trace's last member or not."""
    events = [{"n": i, "s": "]"} for i in range(20)]
    data = b'{"traceEvents": ' + json.dumps(events).encode()[:-1] + ending
    seen, outside = scan(data)
    assert seen == events
    assert outside.complete and outside.tail == tail


def test_the_rest_of_a_trace_ending_with_its_array_is_parsed_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = orjson
    parsed: list[int] = []

    class Counting:
        JSONDecodeError = real.JSONDecodeError

        @staticmethod
        def loads(data: bytes) -> Any:
            parsed.append(len(data))
            return real.loads(data)

    monkeypatch.setattr(events_module, "orjson", Counting)
    events = [{"n": i} for i in range(100)]
    seen, outside = scan(json.dumps({"schemaVersion": 1, "traceEvents": events}).encode())
    assert seen == events and outside.tail == b"}"
    assert len(parsed) == 1
