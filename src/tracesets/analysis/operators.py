"""Each operator and kernel name of a trace: its count and time, as HTA's TraceDiff groups them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

#: Rows a trace keeps, largest ``total_us`` first; the rest are summed in one row.
MAX_OPERATOR_ROWS: Final = 1024


@dataclass(frozen=True, slots=True)
class OperatorRow:
    name: str  # event name as in the trace (cats merged, as TraceDiff groups by name)
    count: int  # events of this name in any profiled step (HTA iteration >= 0)
    total_us: float  # their summed dur
    first_count: int  # events of this name in the trace's first step (HTA's default)
    first_total_us: float
