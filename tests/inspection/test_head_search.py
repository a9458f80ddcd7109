"""A trace's head is read a chunk at a time, and each chunk is searched for member names once.

A name cut by a chunk's end, or one whose colon comes only in the next chunk (after any
run of whitespace), is found as it is in the whole text; JSON that is no trace costs a
search of each byte per name, not one per chunk read.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from tracesets.inspection import jsonscan, traces
from tracesets.inspection.jsonscan import Head, find_key
from tracesets.inspection.source import BytesSource
from tracesets.inspection.traces import KINETO_KEYS, kind_of, read_source

SMALL_CHUNK = 64


def head_of(data: bytes) -> Head:
    head, _ = read_source(BytesSource(data))
    return head


def member(name: str, before_colon: str, after_colon: str) -> str:
    return f"{json.dumps(name)}{before_colon}:{after_colon}1"


whitespace = st.text(alphabet=" \t\r\n", max_size=3 * SMALL_CHUNK)


@given(
    filler=st.integers(min_value=0, max_value=4 * SMALL_CHUNK),
    names=st.sampled_from([*((key,) for key in KINETO_KEYS), ("nodes", "schema"), ("nodes",)]),
    gap=st.integers(min_value=0, max_value=3 * SMALL_CHUNK),
    before_colon=whitespace,
    after_colon=whitespace,
)
@example(filler=0, names=("traceEvents",), gap=0, before_colon=" " * 150, after_colon="")
@example(filler=0, names=("nodes", "schema"), gap=200, before_colon="", after_colon="\n" * 100)
def test_members_across_chunk_ends_are_found_as_in_the_whole_text(
    filler: int, names: tuple[str, ...], gap: int, before_colon: str, after_colon: str
) -> None:
    members = [f'"pad":"{"x" * filler}"']
    for name in names:
        members += [member(name, before_colon, after_colon), f'"more":"{"y" * gap}"']
    data = ("{" + ",".join(members) + "}").encode()
    expected = {1: "kineto", 2: "chakra"}.get(len(names)) if names != ("nodes",) else None
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(jsonscan, "CHUNK", SMALL_CHUNK)
        assert kind_of(head_of(data)) == expected
        head = head_of(data)
        assert head.until_key(names[0]) == find_key(data, names[0])


def test_json_that_is_no_trace_is_searched_once_per_name(monkeypatch: pytest.MonkeyPatch) -> None:
    """Read to the head's end (1 MiB in chunks of 64 KiB), each byte searched once a name."""
    data = json.dumps({"rows": [{"id": i, "label": "no trace here"} for i in range(40_000)]})
    data_bytes = data.encode()
    assert len(data_bytes) > jsonscan.HEAD_BUDGET
    searched = 0

    def counted(data: bytes, name: str, start: int = 0, end: int | None = None) -> int | None:
        nonlocal searched
        searched += (len(data) if end is None else end) - start
        return find_key(data, name, start, end)

    monkeypatch.setattr(traces, "find_key", counted)
    assert kind_of(head_of(data_bytes)) is None
    names = len(KINETO_KEYS) + 2
    chunks = jsonscan.HEAD_BUDGET // jsonscan.CHUNK
    assert searched <= names * (jsonscan.HEAD_BUDGET + chunks * 32)
