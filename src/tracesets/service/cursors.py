"""Cursors: opaque to clients, bound to the route that made them and to what SQL binds.

A cursor is ``<kind>:<number>`` in unpadded URL-safe base64. The kind says which route
made it, so a cursor of one route given to another is refused rather than misread (a list
cursor holds a traceset's sequence number, a ranks cursor a position: either read as the
other pages from the wrong place). The number is bounded by the column it is compared
with (a sequence number is a signed 64-bit integer, a file's index or a trace's position
a 32-bit one on PostgreSQL): past it, the query would fail instead of answering 400.
"""

from __future__ import annotations

import base64
import binascii
from enum import StrEnum
from typing import NoReturn

from tracesets.problems import InvalidRequest, Problem


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

    @property
    def most(self) -> int:
        """The largest number its cursor holds: its column's largest value."""
        return 2**63 - 1 if self is CursorKind.LIST else 2**31 - 1


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


def _refuse(cursor: str, why: str) -> NoReturn:
    raise InvalidRequest.of([Problem("cursor", cursor, why)])
