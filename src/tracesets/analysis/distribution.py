"""A median and a 95th percentile of many durations, in bounded memory.

Up to ``EXACT`` values are kept and the quantiles are exact, interpolated as pandas'
``quantile`` does (linearly between the two nearest ranks). Past that, the values go to
a histogram: bins 0.25 µs wide below ``LINEAR_US``, and above it bins each 2^-10 of
their value wide; a quantile is then the middle of the bin holding its rank, so it is
off by at most 0.125 µs below ``LINEAR_US`` (4.096 ms), and by at most 0.05 % of itself
above. The histogram holds one count per bin used: at most 16,384 below, and 1,024 per
doubling above.
"""

from __future__ import annotations

import math
from array import array
from typing import Final

#: Values kept exactly (8 bytes each).
EXACT: Final = 32_768
LINEAR_US: Final = 4_096.0
_PER_US: Final = 4
_PER_DOUBLING: Final = 1_024
_LINEAR_BINS: Final = int(LINEAR_US * _PER_US)


def _bin(value: float) -> int:
    if value < LINEAR_US:
        return int(value * _PER_US) if value > 0 else 0
    return _LINEAR_BINS + int(_PER_DOUBLING * math.log2(value / LINEAR_US))


def _middle(index: int) -> float:
    if index < _LINEAR_BINS:
        return (index + 0.5) / _PER_US
    above = index - _LINEAR_BINS
    return LINEAR_US * 2 ** ((above + 0.5) / _PER_DOUBLING)


class Distribution:
    """Values seen one at a time; ``quantile`` exact while few, within the bins after."""

    __slots__ = ("bins", "count", "exact")

    def __init__(self) -> None:
        self.count = 0
        self.exact: array[float] | None = array("d")
        self.bins: dict[int, int] = {}

    def add(self, value: float) -> None:
        self.count += 1
        exact = self.exact
        if exact is not None:
            exact.append(value)
            if len(exact) > EXACT:
                for kept in exact:
                    self._count(kept)
                self.exact = None
            return
        self._count(value)

    def _count(self, value: float) -> None:
        index = _bin(value)
        self.bins[index] = self.bins.get(index, 0) + 1

    def quantile(self, q: float) -> float | None:
        if self.count == 0:
            return None
        if self.exact is not None:
            values = sorted(self.exact)
            position = q * (len(values) - 1)
            low = int(position)
            high = min(low + 1, len(values) - 1)
            return values[low] + (values[high] - values[low]) * (position - low)
        rank = q * (self.count - 1)
        seen = 0
        for index in sorted(self.bins):
            seen += self.bins[index]
            if seen > rank:
                return _middle(index)
        return _middle(max(self.bins))  # not reached: the last bin holds rank count - 1
