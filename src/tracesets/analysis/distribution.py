"""A median and a 95th percentile of many durations, in bounded memory.

Up to ``EXACT`` values are kept and the quantiles are exact, interpolated as pandas'
``quantile`` does (linearly between the two nearest ranks). Past that, the values go to
a histogram: bins 0.25 µs wide below ``LINEAR_US``, and above it bins each 2^-10 of
their value wide; a quantile is then the middle of the bin holding its rank, so it is
off by at most 0.125 µs below ``LINEAR_US`` (4.096 ms), and by at most 0.05 % of itself
above. The histogram holds one count per bin used: at most 16,384 below, and 1,024 per
doubling above.

Values come in batches (``add_all``): binning a batch below ``LINEAR_US`` is
``Counter(map(int, map(4.0.__mul__, ...)))``, C loops without a Python call per value,
which a rank's hundreds of thousands of launches need (a call per value was a tenth of
the analysis' time).
"""

from __future__ import annotations

import math
from array import array
from collections import Counter
from collections.abc import Iterable
from typing import Final

#: Values kept exactly (8 bytes each).
EXACT: Final = 32_768
LINEAR_US: Final = 4_096.0
_PER_US: Final = 4
_PER_DOUBLING: Final = 1_024
_LINEAR_BINS: Final = int(LINEAR_US * _PER_US)
_SCALE: Final = float(_PER_US).__mul__
_BELOW_LINEAR: Final = LINEAR_US.__gt__


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
    """Values seen in batches; ``quantile`` exact while few, within the bins after."""

    __slots__ = ("bins", "count", "exact")

    def __init__(self) -> None:
        self.count = 0
        self.exact: array[float] | None = array("d")
        self.bins: dict[int, int] = {}

    def add(self, value: float) -> None:
        self.add_all((value,))

    def add_all(self, values: Iterable[float]) -> None:
        """Values, in any order (a quantile does not depend on it)."""
        exact = self.exact
        if exact is not None:
            exact.extend(values)
            self.count = len(exact)
            if len(exact) > EXACT:
                self.exact = None
                self._count(exact)
            return
        batch = array("d", values)
        self.count += len(batch)
        self._count(batch)

    def _count(self, values: array[float]) -> None:
        below = Counter(map(int, map(_SCALE, filter(_BELOW_LINEAR, values))))
        bins = self.bins
        for index, many in below.items():
            at = index if index > 0 else 0  # (int truncates towards zero)
            bins[at] = bins.get(at, 0) + many
        if below.total() < len(values):
            for value in values:
                if not value < LINEAR_US:
                    index = _bin(value)
                    bins[index] = bins.get(index, 0) + 1

    def restore(self, count: int, exact: bytes | None, bins: list[tuple[int, int]]) -> None:
        """The values as the compiled pass kept them (``native/sweep.c``): exact, as bytes
        of doubles, or counted in bins."""
        self.count = count
        self.bins = dict(bins)
        if exact is None:
            self.exact = None
        else:
            self.exact = array("d")
            self.exact.frombytes(exact)

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
