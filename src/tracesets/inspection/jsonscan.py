"""Finding one member of a huge JSON object without parsing the object.

A profiler trace is one JSON object whose ``traceEvents`` array holds nearly all of its
bytes; the few members that say who wrote it sit before that array or after it. So the
scanner reads the head until the ``"traceEvents"`` key (or a budget), and the tail when
it must, finds a key by its bytes, checks that the bytes really are a key (an object
member's name: after ``{`` or ``,``, before ``:``), and decodes only that member's value
with ``json.JSONDecoder.raw_decode``.

Bytes in, Python values out; no I/O beyond the ``read`` callables handed in.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from tracesets.inspection.budget import spend

#: Bytes read at a time, from the head and through a stream.
CHUNK: Final = 64 * 1024
#: The head is read until the ``"traceEvents"`` key, but never past this.
HEAD_BUDGET: Final = 1024 * 1024
#: The tail kept or read: what comes after ``traceEvents`` (distributedInfo, the
#: profiler's log lines, traceName) is a few kilobytes in real traces.
TAIL_WINDOW: Final = 4 * 1024 * 1024
#: A value longer than this is not decoded (a distributedInfo is a few hundred bytes).
MAX_VALUE_BYTES: Final = 1024 * 1024

WHITESPACE: Final = b" \t\r\n"
UTF8_BOM: Final = b"\xef\xbb\xbf"

_DECODER: Final = json.JSONDecoder()


def _is_key_at(data: bytes, at: int, key: bytes) -> int | None:
    """Where the value of ``key`` starts when the bytes at ``at`` are that member's name."""
    before = at - 1
    while before >= 0 and data[before] in WHITESPACE:
        before -= 1
    if before >= 0 and data[before] not in b"{,":
        return None  # a string value, or the name inside an escaped string
    after = at + len(key)
    while after < len(data) and data[after] in WHITESPACE:
        after += 1
    if after >= len(data) or data[after] != ord(":"):
        return None
    after += 1
    while after < len(data) and data[after] in WHITESPACE:
        after += 1
    return after


def find_key(data: bytes, name: str, start: int = 0, end: int | None = None) -> int | None:
    """The first member named ``name`` in ``data[start:end]``: where its value starts."""
    key = json.dumps(name).encode()
    end = len(data) if end is None else end
    at = data.find(key, start, end)
    while at != -1:
        value = _is_key_at(data, at, key)
        if value is not None:
            return value
        at = data.find(key, at + 1, end)
    return None


def resume_at(data: bytes, searched: int, name: str) -> int:
    """Where a search for member ``name`` goes on once ``data`` has grown past the
    ``searched`` bytes already searched: a name cut by their end, or one whose colon or
    value had not come yet, is looked at again, and nothing before it."""
    end = _before_whitespace(data, searched)
    if end > 0 and data[end - 1] == ord(":"):
        end = _before_whitespace(data, end - 1)
    return max(0, end - len(json.dumps(name).encode()))


def _before_whitespace(data: bytes, end: int) -> int:
    while end > 0 and data[end - 1] in WHITESPACE:
        end -= 1
    return end


def find_last_key(data: bytes, name: str, start: int = 0, end: int | None = None) -> int | None:
    """The last member named ``name`` in ``data[start:end]``: where its value starts.

    The last, as Python's ``json`` (and so Holistic Trace Analysis) reads an object whose
    member is repeated."""
    key = json.dumps(name).encode()
    at = data.rfind(key, start, len(data) if end is None else end)
    while at != -1:
        value = _is_key_at(data, at, key)
        if value is not None:
            return value
        at = data.rfind(key, start, at)
    return None


class ValueUnreadable(Exception):
    """The bytes at a member's value are not one whole JSON value (cut short, or not JSON)."""


def decode_value(data: bytes, at: int) -> object:
    """The JSON value starting at ``data[at]``, decoded alone."""
    text = data[at : at + MAX_VALUE_BYTES].decode("utf-8", errors="replace")
    try:
        value, _ = _DECODER.raw_decode(text)
    except (ValueError, RecursionError) as error:
        if len(data) - at > MAX_VALUE_BYTES:
            raise ValueUnreadable(f"longer than {MAX_VALUE_BYTES:,} bytes") from error
        raise ValueUnreadable(f"not valid JSON ({error})") from error
    return value


def first_significant(data: bytes) -> int | None:
    """The first byte that is not whitespace or a UTF-8 byte order mark."""
    stripped = data.removeprefix(UTF8_BOM).lstrip(WHITESPACE)
    return stripped[0] if stripped else None


@dataclass(slots=True)
class Head:
    """The first bytes of a trace, read a chunk at a time as far as the caller needs."""

    read: Callable[[int], bytes]
    data: bytes = b""
    complete: bool = False  # the trace ended within ``data``

    def more(self) -> bool:
        """Read one more chunk; False at the end of the trace or of the head budget."""
        if self.complete or len(self.data) >= HEAD_BUDGET:
            return False
        chunk = self.read(min(CHUNK, HEAD_BUDGET - len(self.data)))
        if not chunk:
            self.complete = True
            return False
        self.data += chunk
        return True

    def until_key(self, name: str) -> int | None:
        """Read on until member ``name`` shows (where its value starts) or the head ends."""
        searched = 0
        while True:
            found = find_key(self.data, name, resume_at(self.data, searched, name))
            if found is not None and found < len(self.data):
                return found
            searched = len(self.data)
            if not self.more():
                return None

    def until_bytes(self, marker: bytes) -> int | None:
        """Read on until ``marker`` shows (where it starts) or the head ends."""
        searched = 0
        while True:
            at = self.data.find(marker, max(0, searched - len(marker)))
            if at != -1:
                return at
            searched = len(self.data)
            if not self.more():
                return None


def stream_tail(head: Head, window: int = TAIL_WINDOW) -> tuple[int, bytes]:
    """Read a stream to its end after ``head``, keeping only its last ``window`` bytes.

    Returns where the tail starts in the trace, and the tail: at least ``window`` bytes
    (all of them for a shorter stream), and less than one piece more (a chunk, or the
    head). Pieces are kept whole in a deque and dropped from the front once the rest
    still covers the window, so memory stays at about one window whatever the length of
    the stream.
    """
    kept: deque[bytes] = deque([head.data])
    kept_bytes = total = len(head.data)
    while not head.complete:
        spend()
        chunk = head.read(CHUNK)
        if not chunk:
            head.complete = True
            break
        kept.append(chunk)
        kept_bytes += len(chunk)
        total += len(chunk)
        while kept_bytes - len(kept[0]) >= window:
            kept_bytes -= len(kept.popleft())
    tail = b"".join(kept)
    return total - len(tail), tail
