"""Trace events decoded into the few fields the analysis reads; the rest never built.

A rank's events are mostly fields no figure uses (a CPU operator's input shapes and
types, a kernel's grid and registers). ``orjson`` builds a dict, a string and a number
for every one of them, about three quarters of the CPU time of reading a trace.
msgspec decodes into ``TraceEvent`` and ``EventArgs`` instead: the fields they declare
are built, every other one is checked as JSON and skipped. Measured on a rank's trace of
349 KB (971 events): 1.49 ms with ``orjson.loads``, 0.56 ms decoded here.

The events are the same as from ``orjson.loads`` followed by ``typed``, which is what
``tests/analysis/test_decoding.py`` holds, and what the scanner falls back to whenever
msgspec refuses a document, so errors are orjson's, word for word. Where msgspec
accepts what orjson refuses:

- bytes that are not UTF-8: msgspec checks only the strings it builds, so a document
  that is not plain ASCII is checked whole first (``bytes.isascii`` is nearly free);
- a number too large for a double in a skipped field (``1e999``): read, not refused,
  as Python's ``json`` and HTA read it;
- an integer past 64 bits in a kept field stays an integer, as Python's ``json`` reads
  it (orjson makes it a float).
"""

from __future__ import annotations

import re
from typing import Any, Final

import msgspec

from tracesets.analysis.events import Decoding
from tracesets.inspection.jsonscan import WHITESPACE


class EventArgs(msgspec.Struct, gc=False):
    """An event's ``args``, the keys the figures read (absent ``stream`` and
    ``correlation`` read as -1, as HTA reads them)."""

    stream: Any = -1
    correlation: Any = -1
    group_name: Any = msgspec.field(default=None, name="Process Group Name")
    group_description: Any = msgspec.field(default=None, name="Process Group Description")
    group_ranks: Any = msgspec.field(default=None, name="Process Group Ranks")
    collective: Any = msgspec.field(default=None, name="Collective name")
    elements: Any = msgspec.field(default=None, name="In msg nelems")
    dtype: Any = None


class TraceEvent(msgspec.Struct, gc=False):
    """One item of ``traceEvents`` that is an object: the fields the figures read.

    Not tracked by the cyclic collector: an event refers to no other event.
    """

    name: Any = None
    cat: Any = None
    ts: Any = None
    dur: Any = None
    args: EventArgs | list[Any] | str | int | float | bool | None = None


#: What an item of the array may be: an object, or any other JSON value (skipped).
Item = TraceEvent | list[Any] | str | int | float | bool | None
#: The args of an event that has none (read, never written).
NO_ARGS: Final = EventArgs()

_DECODER: Final = msgspec.json.Decoder(list[Item])
#: msgspec's word for content after the document, and the byte past its first character.
_TRAILING: Final = re.compile(r"trailing characters \(byte (\d+)\)")


def decode(doc: bytes) -> tuple[list[Item], int | None] | None:
    """The items of the JSON array at the start of ``doc``, and where what follows it
    starts (None when nothing does); None when orjson must judge ``doc`` (msgspec
    refuses it, or it is not all ASCII and not UTF-8).

    The end is taken from msgspec's message only when it holds: the bytes before it
    decode as the array and it is not whitespace, so it is where orjson would stop.
    """
    if not doc.isascii():
        try:
            doc.decode()
        except UnicodeDecodeError:
            return None
    try:
        return _DECODER.decode(doc), None
    except msgspec.DecodeError as error:
        trailing = _TRAILING.search(str(error))
        if trailing is None:
            return None
        end = int(trailing[1]) - 1
    except RecursionError:
        return None
    if not 0 < end < len(doc) or doc[end] in WHITESPACE:
        return None
    try:
        return _DECODER.decode(doc[:end]), end
    except (msgspec.DecodeError, RecursionError):
        return None


def typed(items: list[Any]) -> list[Item]:
    """Items as ``orjson.loads`` gives them (dicts, lists, strings, numbers), typed."""
    converted: list[Item] = msgspec.convert(items, list[Item])
    return converted


#: The scanner's events for the figures: msgspec's, orjson's when it must judge.
TYPED: Final = Decoding(fast=decode, convert=typed)
