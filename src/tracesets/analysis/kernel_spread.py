"""Each top kernel's spread over ranks: the least, median and most time it took on the
ranks that list it, and which ranks took the least and the most, so a kernel that is
slow on one rank stands out.

Computed once per traceset from each rank's ``topKernels`` (``kernel_stats``), not from
the events again: a kernel counts on the ranks where it is among the ``TOP`` of most
time (``ranks`` says on how many), and ``other`` is never one kernel. The ``SHOWN``
kernels of most time summed over those ranks are kept.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from tracesets.analysis.kernel_stats import OTHER_NAME
from tracesets.analysis.rank import RankAnalysis

#: Kernels in the spread, by their time summed over ranks.
SHOWN: Final = 20


@dataclass(frozen=True, slots=True)
class KernelSpread:
    name: str
    type: str
    ranks: int
    min_us: float
    median_us: float
    max_us: float
    min_rank: int
    max_rank: int

    def json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "type": self.type,
            "ranks": self.ranks,
            "minUs": self.min_us,
            "medianUs": self.median_us,
            "maxUs": self.max_us,
            "minRank": self.min_rank,
            "maxRank": self.max_rank,
        }


def kernel_spread(by_rank: Mapping[int, RankAnalysis]) -> list[KernelSpread]:
    """The spread of each kernel some rank lists among its top ones (ties: lowest rank)."""
    sums: dict[str, dict[int, float]] = {}
    types: dict[str, str] = {}
    for rank in sorted(by_rank):
        stats = by_rank[rank].kernels
        for row in stats.top if stats is not None else ():
            if row.name == OTHER_NAME and row.type == OTHER_NAME.upper():
                continue
            sums.setdefault(row.name, {})[rank] = row.sum_us
            types.setdefault(row.name, row.type)
    ranked = sorted(sums, key=lambda name: (-sum(sums[name].values()), name))[:SHOWN]
    spread = []
    for name in ranked:
        of_rank = sums[name]
        low = min(of_rank, key=lambda rank: (of_rank[rank], rank))
        high = min(of_rank, key=lambda rank: (-of_rank[rank], rank))
        spread.append(
            KernelSpread(
                name=name,
                type=types[name],
                ranks=len(of_rank),
                min_us=of_rank[low],
                median_us=round(statistics.median(of_rank.values()), 3),
                max_us=of_rank[high],
                min_rank=low,
                max_rank=high,
            )
        )
    return spread
