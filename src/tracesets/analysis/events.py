"""A Kineto trace's events, a batch at a time, from a stream of its bytes.

Python's ``json`` parses only whole documents, and a trace is one document of up to
gigabytes. Nearly all of it is the ``traceEvents`` array, whose items are small objects.
So the scanner reads the stream a block at a time, cuts each block after the last
``}`` that is followed by ``,`` and ``{`` (the end of one event and the start of the
next), and hands ``[`` + those bytes + ``]`` to orjson. orjson validates what it parses,
so a cut that is not between two events (inside a string, inside an event's ``args``)
makes the parse fail, and an earlier cut is tried; a cut past the end of the array makes
orjson stop with "unexpected content after document" exactly where the array ended.
Memory is one block and its events, whatever the length of the trace.

A block no cut of which parses (an event longer than a block, or bytes that are no
events: a string megabytes long full of ``}, {``) is parsed again only once what is
left to parse has doubled, so the bytes handed to the parser stay within a few times
the trace's, whatever its bytes: parsed again at every block read, 64 MiB of such bytes
cost minutes.

Measured by ``bench/analyze_traces.py`` on a 256 MiB generated trace, in CPU time of one
core (median of 3 runs, parsing only): this scanner 212 MB/s; the standard library's
``JSONDecoder.raw_decode`` event by event 93 MB/s; ijson's C backend
(``ijson.items(f, "traceEvents.item")``, yajl2_c) 81 MB/s; all three within the
interpreter's own 28 MiB of peak RSS. orjson on the whole document, for reference,
46 MB/s at 2.0 GiB. So the scanner: 2.6 times ijson's speed, and orjson's own validation
of every byte.

What comes before the array (``distributedInfo`` in PyTorch's traces) and after it
(``distributedInfo`` in Kineto's on-demand traces) is kept, up to a bound, so the caller
can read the trace's own word on its rank and process groups.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Final

import orjson

from tracesets.inspection.budget import spend
from tracesets.inspection.decompress import Readable
from tracesets.inspection.jsonscan import HEAD_BUDGET, TAIL_WINDOW, WHITESPACE, Head

#: Bytes read from the stream at a time, and the usual size of one parse.
BLOCK: Final = 256 * 1024
#: One event may not be longer than this (real events are under a kilobyte).
MAX_EVENT_BYTES: Final = 64 * 1024 * 1024
#: Earlier cuts tried in a block before reading on (a cut fails only inside a string or
#: an event's args, or past the end of the array).
CUT_TRIES: Final = 6

_AFTER_DOCUMENT: Final = "unexpected content after document"
_END_OF_DATA: Final = "unexpected end of data"


class EventsUnreadable(Exception):
    """The ``traceEvents`` array is not a readable JSON array of events."""


@dataclass(slots=True)
class Outside:
    """The bytes of the trace before ``traceEvents`` and after its array, as far as kept."""

    head: bytes = b""
    tail: bytes = b""
    found: bool = False  # the trace has a traceEvents array
    complete: bool = False  # the array ended before the stream did


def _next_significant(data: bytes, at: int) -> int:
    while at < len(data) and data[at] in WHITESPACE:
        at += 1
    return at


def _cuts(buffer: bytes) -> Iterator[int]:
    """Where events may end, last first: ``}`` then ``,`` then ``{``, whitespace aside."""
    end = len(buffer)
    while True:
        at = buffer.rfind(b"}", 0, end)
        if at == -1:
            return
        comma = _next_significant(buffer, at + 1)
        if comma < len(buffer) and buffer[comma] == ord(","):
            brace = _next_significant(buffer, comma + 1)
            if brace < len(buffer) and buffer[brace] == ord("{"):
                yield at
        end = at


def _byte_offset(doc: bytes, chars: int) -> int:
    """The byte offset of character ``chars`` of UTF-8 ``doc`` (orjson counts characters)."""
    return len(doc[: chars * 4].decode("utf-8", errors="ignore")[:chars].encode())


@dataclass(frozen=True, slots=True)
class Decoding:
    """How events are built: ``fast`` (bytes to events and where the array ended, or None
    when orjson must judge), else orjson's dicts through ``convert``."""

    fast: Callable[[bytes], tuple[list[Any], int | None] | None] | None = None
    convert: Callable[[list[Any]], list[Any]] | None = None

    def built(self, items: list[Any]) -> list[Any]:
        return items if self.convert is None else self.convert(items)


#: Events as orjson builds them: dicts, lists, strings and numbers.
PLAIN: Final = Decoding()


def _parse(
    doc: bytes, decoding: Decoding = PLAIN
) -> tuple[list[Any] | None, int | None, str | None]:
    """The events of ``doc`` (``[`` ... ``]``), where it ended if the array ended early, and
    why it could not be parsed."""
    if decoding.fast is not None:
        found = decoding.fast(doc)
        if found is not None:
            return found[0], found[1], None
    try:
        return decoding.built(orjson.loads(doc)), None, None
    except orjson.JSONDecodeError as error:
        if error.msg == _AFTER_DOCUMENT:
            end = _byte_offset(doc, error.pos)
            events = orjson.loads(doc[:end])
            return decoding.built(events), end, None
        if _byte_offset(doc, error.pos) < len(doc) - 1:  # not where the cut was: bad JSON
            raise EventsUnreadable(
                f"the traceEvents array is not valid JSON: {error.msg}"
            ) from None
        return None, None, error.msg


def _parse_to_end(
    buffer: bytes, decoding: Decoding
) -> tuple[list[Any] | None, int | None, str | None]:
    """``_parse(b"[" + buffer)`` for the rest of a trace, parsed once where it can be.

    Parsed whole, the rest of a trace fails with "unexpected content after document" at
    the array's end (the ``}`` that closes the trace follows it), and the array must be
    parsed again up to there. A JSON value's extent is fixed by its own bytes, so when
    ``[`` and the bytes up to the last ``]`` parse as an array, that array is the one the
    whole would have given, ending there: one parse instead of two. Otherwise (the array
    is not the trace's last member, or the bytes are not JSON) the whole is parsed as
    before, so every answer and error is the same.
    """
    last = buffer.rfind(b"]")
    after = buffer[last + 1 :].lstrip(WHITESPACE)
    if last == -1 or not after.rstrip(WHITESPACE):
        return _parse(b"[" + buffer, decoding)
    candidate = b"[" + buffer[: last + 1]
    # where orjson would have stopped: at what follows the array, whitespace aside
    follows = len(candidate) + len(buffer) - last - 1 - len(after)
    if decoding.fast is not None:
        found = decoding.fast(candidate)
        if found is not None:
            return found[0], follows if found[1] is None else found[1], None
        return _parse(b"[" + buffer, decoding)
    try:
        return decoding.built(orjson.loads(candidate)), follows, None
    except orjson.JSONDecodeError as error:
        if error.msg == _AFTER_DOCUMENT:  # the array ended within the candidate, earlier
            end = _byte_offset(candidate, error.pos)
            return decoding.built(orjson.loads(candidate[:end])), end, None
    return _parse(b"[" + buffer, decoding)


def _parsed_list(value: object) -> list[Any]:
    if not isinstance(value, list):  # "[" ... "]" always parses to a list
        raise EventsUnreadable("traceEvents is not an array")
    return value


def scan_events(
    stream: Readable,
    on_batch: Callable[[list[Any]], None],
    decoding: Decoding = PLAIN,
    block: int | None = None,
) -> Outside:
    """Hand each batch of ``traceEvents`` items to ``on_batch``, built by ``decoding``;
    what is outside, returned. ``block``: the bytes read at a time (``BLOCK``, read when
    called: tests set it).

    Raises ``EventsUnreadable`` when the array is not valid JSON or is cut short (the
    batches before that point have been handed over).
    """
    block = BLOCK if block is None else block
    head = Head(stream.read)
    at = head.until_key("traceEvents")
    outside = Outside(head=head.data[: at if at is not None else HEAD_BUDGET])
    if at is None:
        return outside
    if at >= len(head.data) or head.data[at] != ord("["):
        raise EventsUnreadable("traceEvents is not an array")
    outside.found = True
    buffer = head.data[at + 1 :]
    eof = head.complete
    read: list[bytes] = []  # blocks read since the buffer was joined, joined when parsed
    read_bytes = 0
    parse_at = block  # the buffer is parsed once it holds this many bytes (or at the end)
    while True:
        spend()
        if not eof and len(buffer) + read_bytes < parse_at:
            more = stream.read(block)
            if more:
                read.append(more)
                read_bytes += len(more)
                continue
            eof = True
        if read:
            buffer = b"".join([buffer, *read])
            read, read_bytes = [], 0
        start = _next_significant(buffer, 0)
        if start < len(buffer) and buffer[start] == ord("]"):  # empty array, or ended at a cut
            outside.complete = True
            outside.tail = _tail(buffer[start + 1 :], stream, eof)
            return outside
        parsed = len(buffer)
        done, buffer = _take(buffer, on_batch, decoding, eof=eof)
        if done is not None:
            outside.complete = True
            outside.tail = _tail(done, stream, eof)
            return outside
        if eof:
            raise EventsUnreadable("the traceEvents array is cut short: the trace ends inside it")
        if len(buffer) > MAX_EVENT_BYTES:
            raise EventsUnreadable(
                f"no event ends within {MAX_EVENT_BYTES:,} bytes of traceEvents, or they are "
                "not JSON"
            )
        # Most of what was parsed is left: parse it again once it has doubled. A parse
        # costs a few times its length; it is then paid for by the bytes it took, or by
        # those read before the next one, so no byte pays more than a few times.
        parse_at = block
        if 2 * len(buffer) > parsed:
            parse_at = min(max(block, 2 * len(buffer)), MAX_EVENT_BYTES + 1)


def _take(
    buffer: bytes, on_batch: Callable[[list[Any]], None], decoding: Decoding, *, eof: bool
) -> tuple[bytes | None, bytes]:
    """Parse the events at the start of ``buffer``: (what follows the array if it ended, rest)."""
    if eof:  # the whole rest of the trace: the array must end in it
        events, end, why = _parse_to_end(buffer, decoding)
        if events is not None:  # the array ended, and something (or nothing) follows it
            on_batch(_parsed_list(events))
            return (b"" if end is None else buffer[end - 1 :]), b""
        if why != _END_OF_DATA:
            raise EventsUnreadable(f"the traceEvents array is not valid JSON: {why}")
    for tries, cut in enumerate(_cuts(buffer)):
        if tries >= CUT_TRIES:
            break
        events, end, _ = _parse(b"[" + buffer[: cut + 1] + b"]", decoding)
        if events is None:
            continue
        on_batch(_parsed_list(events))
        if end is not None:
            return buffer[end - 1 :], b""
        comma = _next_significant(buffer, cut + 1)
        return None, buffer[comma + 1 :]
    return None, buffer


def _tail(after: bytes, stream: Readable, eof: bool) -> bytes:
    """The bytes after the array, read to the end of the stream, the last ``TAIL_WINDOW`` kept."""
    tail = after[-TAIL_WINDOW:]
    while not eof:
        more = stream.read(BLOCK)
        if not more:
            break
        tail = (tail + more)[-TAIL_WINDOW:]
    return tail
