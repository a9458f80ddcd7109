"""Events decoded into their used fields are the events orjson builds, typed.

``decoding.decode`` builds only the fields the figures read and skips the rest; it must
give what ``orjson.loads`` followed by ``typed`` gives, for events of every shape, with
or without content after the array, and leave to orjson (None) every document it might
judge differently. Through the scanner, the figures are the same either way.
"""

from __future__ import annotations

import io
import json
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.analysis.test_events import TRICKY
from tracesets.analysis import events as events_module
from tracesets.analysis.decoding import TYPED, decode, typed
from tracesets.analysis.events import PLAIN, EventsUnreadable, scan_events

SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**63), 2**64 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=8),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=8,
)
KEYS = st.sampled_from(
    ["stream", "correlation", "Process Group Name", "Process Group Description",
     "Process Group Ranks", "Collective name", "In msg nelems", "dtype", "External id"]
)  # fmt: skip
EVENTS = st.lists(
    st.one_of(
        st.fixed_dictionaries(
            {},
            optional={
                "name": VALUES,
                "cat": VALUES,
                "ts": VALUES,
                "dur": VALUES,
                "ph": VALUES,
                "args": st.one_of(st.dictionaries(KEYS, VALUES, max_size=5), VALUES),
            },
        ),
        VALUES,
    ),
    max_size=12,
)


def as_json(items: list[Any], ascii_only: bool, indent: int | None) -> bytes:
    return json.dumps(items, ensure_ascii=ascii_only, indent=indent).encode()


@settings(max_examples=400, deadline=None)
@given(EVENTS, st.booleans(), st.sampled_from([None, 1]))
def test_decoded_events_are_orjsons_typed(
    items: list[Any], ascii_only: bool, indent: int | None
) -> None:
    doc = as_json(items, ascii_only, indent)
    assert decode(doc) == (typed(orjson.loads(doc)), None)


@settings(max_examples=200, deadline=None)
@given(EVENTS, st.sampled_from([b"}", b' , "distributedInfo": {"rank": [1, 2]}}', b"\n ]"]))
def test_content_after_the_array_is_found_where_orjson_finds_it(
    items: list[Any], after: bytes
) -> None:
    doc = as_json(items, False, None) + after
    with pytest.raises(orjson.JSONDecodeError) as raised:
        orjson.loads(doc)
    end = events_module._byte_offset(doc, raised.value.pos)
    assert decode(doc) == (typed(orjson.loads(doc[:end])), end)


@pytest.mark.parametrize(
    "doc",
    [
        b'[{"x": "\xff"}]',  # not UTF-8, in a field never built
        b'[{"x": "\xed\xa0\x80"}]',  # a surrogate in UTF-8
        b'[{"x": "\\ud800"}]',  # a lone surrogate
        b'[{"name": 1e999}]',  # too large for a double, in a kept field
        b'[{"x": 1}, {"b": nope}]',
        b'[{"x": 1},]',
    ],
)
def test_what_orjson_may_judge_otherwise_is_left_to_it(doc: bytes) -> None:
    assert decode(doc) is None


def figures_of(data: bytes) -> tuple[list[Any], bytes, bytes, str | None]:
    """Typed events, the kept head and tail, and the error, through the scanner."""
    seen: list[Any] = []
    try:
        outside = scan_events(io.BytesIO(data), seen.extend, TYPED)
    except EventsUnreadable as error:
        return seen, b"", b"", str(error)
    return seen, outside.head, outside.tail, None


def plain_figures_of(data: bytes) -> tuple[list[Any], bytes, bytes, str | None]:
    seen: list[Any] = []
    try:
        outside = scan_events(io.BytesIO(data), seen.extend, PLAIN)
    except EventsUnreadable as error:
        return typed(seen), b"", b"", str(error)
    return typed(seen), outside.head, outside.tail, None


@pytest.mark.parametrize("block", [16, 64, 1 << 20])
@pytest.mark.parametrize(
    "ending",
    [b"]}", b'], "distributedInfo": {"rank": 1, "pg": [[0, 1]]}}', b"]", b', {"b": nope}]}',
     b', {"x": "\xff"}]}', b', {"x": 1e999}]}', b', {"x": '],
)  # fmt: skip
def test_the_scanner_gives_the_same_events_and_errors_either_way(
    monkeypatch: pytest.MonkeyPatch, block: int, ending: bytes
) -> None:
    monkeypatch.setattr(events_module, "BLOCK", block)
    body = json.dumps(TRICKY * 20, ensure_ascii=False).encode()[:-1]
    data = b'{"schemaVersion": 1, "traceEvents": ' + body + ending
    typed_figures, plain = figures_of(data), plain_figures_of(data)
    if ending == b', {"x": 1e999}]}':  # read by msgspec, as Python's json reads it
        assert plain[3] is not None and "infinity" in plain[3] and typed_figures[3] is None
        assert typed_figures[0][: len(plain[0])] == plain[0]
        return
    assert typed_figures == plain
