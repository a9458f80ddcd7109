"""What a file's name says: its rank, and the formats known only by their extension.

Nsight Systems reports (``.nsys-rep``, formerly ``.qdrep``) and Chakra protobuf traces
(``.et``) hold no rank Tracesets can read, and Chakra host traces hold none at all (see
``chakra.py``); launchers name such files after the rank instead. The patterns, tried
on the whole path (a member ``rank3/trace.json`` counts), the last match winning:

- ``rank`` then an optional ``-`` or ``_`` then digits, anywhere: ``rank3``,
  ``trace_rank-12.json``, ``RANK_0.nsys-rep``;
- digits between dots right before ``.et``, ``.json``, ``.nsys-rep``: ``chakra.0.et``,
  ``trace.7.json``;
- ``host_N.json``, the name Chakra's documentation gives host traces.
"""

from __future__ import annotations

import re
from typing import Final

MAX_RANK_DIGITS: Final = 10

_PATTERNS: Final = (
    re.compile(rf"rank[-_]?(\d{{1,{MAX_RANK_DIGITS}}})(?!\d)", re.IGNORECASE),
    re.compile(
        rf"\.(\d{{1,{MAX_RANK_DIGITS}}})\.(?:et|json|nsys-rep|qdrep)(?:\.gz)?$", re.IGNORECASE
    ),
    re.compile(rf"host[-_](\d{{1,{MAX_RANK_DIGITS}}})\.json(?:\.gz)?$", re.IGNORECASE),
)

_NSYS_SUFFIXES: Final = (".nsys-rep", ".qdrep")
_ET_SUFFIXES: Final = (".et",)


def rank_in_name(name: str) -> int | None:
    """The rank a file name gives, or None when no pattern matches."""
    for pattern in _PATTERNS:
        matches = list(pattern.finditer(name))
        if matches:
            return int(matches[-1].group(1))
    return None


def format_by_name(name: str) -> str | None:
    """``nsys-rep`` or ``et`` for files known only by their extension, else None."""
    lowered = name.lower()
    if lowered.endswith(_NSYS_SUFFIXES):
        return "nsys-rep"
    if lowered.endswith(_ET_SUFFIXES):
        return "et"
    return None
