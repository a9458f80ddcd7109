"""Cursors: opaque to clients, bound to the route that made them and to what SQL binds.

A cursor is ``<kind>:<number>`` in unpadded URL-safe base64. The kind says which route
made it, so a cursor of one route given to another is refused rather than misread (a list
cursor holds a traceset's sequence number, a ranks cursor a position: either read as the
other pages from the wrong place). The number is bounded by the column it is compared
with (a sequence number is a signed 64-bit integer, a file's index or a trace's position
a 32-bit one on PostgreSQL): past it, the query would fail instead of answering 400.

A list sorted by a figure pages by (figure, sequence number): its cursor is
``s1:<sort>:<figure>:<number>``, the sort it was made under named, so that a cursor of one
order given with another is refused rather than paging from a place that order does not
have. The figure is written as Python's shortest exact decimal, read back to the same float.
"""

from __future__ import annotations

import base64
import binascii
import math
from enum import StrEnum
from typing import NoReturn

from tracesets.problems import InvalidRequest, Problem
from tracesets.vocabulary import DEFAULT_SORT, SORTS, Sort


class CursorKind(StrEnum):
    """Which route a cursor pages, and how that route's cursor is tagged."""

    #: The list of tracesets (the first kind, its tag kept so list cursors still read).
    LIST = "v1"
    #: A traceset's files (GET …/files, the traceset's ``filesNextCursor``).
    FILES = "f1"
    #: The upload status (GET …/uploads, upload answers' ``uploadsNextCursor``).
    UPLOADS = "u1"
    #: A traceset's per-rank figures (GET …/ranks).
    RANKS = "r1"
    #: The list of tracesets sorted by a figure (``sort=``).
    SORTED = "s1"
    #: A comparison's rows: its ranks, its kernels, its operators (GET …/compare/…).
    COMPARED_RANKS = "cr1"
    COMPARED_KERNELS = "ck1"
    COMPARED_OPERATORS = "co1"

    @property
    def most(self) -> int:
        """The largest number its cursor holds: its column's largest value."""
        return 2**63 - 1 if self in (CursorKind.LIST, CursorKind.SORTED) else 2**31 - 1


def encode_cursor(kind: CursorKind, number: int) -> str:
    return base64.urlsafe_b64encode(f"{kind.value}:{number}".encode()).decode().rstrip("=")


def decode_cursor(cursor: str, kind: CursorKind) -> int:
    """The number of a cursor ``kind``'s route handed out; 400 naming ``cursor`` for any
    other (malformed, made by another route, or out of range)."""
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        text = ""
    tag, _, digits = text.partition(":")
    if tag != kind.value:
        other = next((k for k in CursorKind if k.value == tag), None)
        if other is not None:
            _refuse(
                cursor,
                f"cursor pages the {other.name.lower()} route, not the {kind.name.lower()} one",
            )
    if tag != kind.value or not (digits.isascii() and digits.isdigit()):
        _refuse(cursor, "cursor is not one this service handed out; use nextCursor as given")
    if int(digits) > kind.most:
        _refuse(cursor, f"cursor is out of range (0 to {kind.most})")
    return int(digits)


def encode_list_cursor(sort: Sort, seq: int, figure: float | None) -> str:
    """The list's cursor after the traceset ``seq`` (whose sorted figure is ``figure``)."""
    if sort == DEFAULT_SORT:
        return encode_cursor(CursorKind.LIST, seq)
    text = f"{CursorKind.SORTED.value}:{sort}:{figure!r}:{seq}"
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def decode_list_cursor(cursor: str, sort: Sort) -> tuple[float | None, int]:
    """(figure, seq) of a list cursor made under ``sort`` (figure None in created order);
    400 naming ``cursor`` for one made under another sort, or any other."""
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        text = ""
    tag, _, rest = text.partition(":")
    made = DEFAULT_SORT if tag == CursorKind.LIST.value else rest.partition(":")[0]
    if tag in (CursorKind.LIST.value, CursorKind.SORTED.value) and made != sort:
        shown = made if made in SORTS else "another sort"
        _refuse(cursor, f"cursor continues the list sorted by {shown}, not sort={sort}")
    if sort == DEFAULT_SORT:
        return None, decode_cursor(cursor, CursorKind.LIST)
    if tag != CursorKind.SORTED.value:
        decode_cursor(cursor, CursorKind.SORTED)  # refuses it, naming its route if known
    figure_text, _, digits = rest.partition(":")[2].partition(":")
    try:
        figure = float(figure_text)
    except ValueError:
        figure = math.nan
    if not math.isfinite(figure) or not (digits.isascii() and digits.isdigit()):
        _refuse(cursor, "cursor is not one this service handed out; use nextCursor as given")
    if int(digits) > CursorKind.SORTED.most:
        _refuse(cursor, f"cursor is out of range (0 to {CursorKind.SORTED.most})")
    return figure, int(digits)


def _refuse(cursor: str, why: str) -> NoReturn:
    raise InvalidRequest.of([Problem("cursor", cursor, why)])
