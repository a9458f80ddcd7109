"""The breakdown computed the plain way, every GPU event held: the reference for ``kernels``.

Tracesets once computed GPU time like this: every interval and launch kept in arrays
until the end, HTA's launch filter applied to them, each kind's intervals sorted and
merged, and the merged intervals of all kinds swept together. Exact, with memory that
grows with the GPU events. The streaming ``GpuEvents`` must give the same figures.
"""

from __future__ import annotations

import heapq
import math
from array import array
from bisect import bisect_left
from collections.abc import Callable, Iterator
from itertools import pairwise

from tracesets.analysis.gpu import KINDS, GpuTime, _breakdown, kernel_kind
from tracesets.analysis.kernel_stats import KernelFold, KernelStats


class ExactGpuIntervals:
    """The GPU events of one rank, and the CPU events' correlations, until the trace ends."""

    def __init__(self) -> None:
        self.starts = array("d")
        self.ends = array("d")
        self.kinds = array("b")
        self.correlations = array("q")  # -1: kept by its own start, not by its launch
        self.launch_correlations = array("q")
        self.launch_starts = array("d")

    def add_gpu(
        self,
        name: str,
        start: float,
        end: float,
        correlation: int,
        stream: int = 0,
        kernel_category: bool = True,
    ) -> None:
        kind = kernel_kind(name)
        self.starts.append(start)
        self.ends.append(end)
        self.kinds.append(kind)
        self.correlations.append(correlation)

    def add_launch(self, start: float, correlation: int, call: float = math.nan) -> None:
        """A CPU-side event with a correlation: what HTA joins GPU events to."""
        self.launch_correlations.append(correlation)
        self.launch_starts.append(start)

    def _launched_before(self, last_step: float) -> Callable[[int], bool]:
        """Whether a correlation was launched before ``last_step``. Launches come in
        correlation order in real traces, so their own array is searched; else a sorted
        copy of those launched in time is made."""
        correlations, starts = self.launch_correlations, self.launch_starts
        if all(a <= b for a, b in pairwise(correlations)):

            def in_order(correlation: int) -> bool:
                at = bisect_left(correlations, correlation)
                while at < len(correlations) and correlations[at] == correlation:
                    if starts[at] < last_step:
                        return True
                    at += 1
                return False

            return in_order
        launched = array(
            "q", sorted(c for c, t in zip(correlations, starts, strict=True) if t < last_step)
        )

        def sorted_copy(correlation: int) -> bool:
            at = bisect_left(launched, correlation)
            return at < len(launched) and launched[at] == correlation

        return sorted_copy

    def kept(self, last_step: float | None) -> bytearray:
        """One byte per GPU event: 1 when HTA keeps it, given where the last step starts."""
        if last_step is None:
            return bytearray(b"\x01") * len(self.starts)
        launched = self._launched_before(last_step)
        return bytearray(
            launched(correlation) if correlation >= 0 else start < last_step
            for correlation, start in zip(self.correlations, self.starts, strict=True)
        )

    def time(self, last_step: float | None) -> tuple[GpuTime, KernelStats] | None:
        """The breakdown (and the kernel types only), or None when no GPU event ran (a CPU-only trace). One kind's
        intervals at a time are sorted and merged, to keep the moment's memory small."""
        keep = self.kept(last_step)
        merged: list[list[tuple[float, float]]] = []
        count = 0
        for kind in range(KINDS):
            intervals = [
                (start, end)
                for start, end, k, kept in zip(
                    self.starts, self.ends, self.kinds, keep, strict=True
                )
                if kept and k == kind
            ]
            count += len(intervals)
            merged.append(_merged(intervals))
            del intervals
        if count == 0:
            return None
        every = _merged([interval for kind in merged for interval in kind])
        span = every[-1][1] - every[0][0]
        busy = sum(end - start for start, end in every)
        by_mask = _time_by_mask(merged)
        return _breakdown(by_mask, span, busy, count), KernelFold().result(by_mask)


def _merged(intervals: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """HTA's ``merge_kernel_intervals``: sorted by start, an interval joins the group
    before it unless it starts after every end so far; each group is (first start,
    last end)."""
    intervals.sort()
    merged: list[tuple[float, float]] = []
    reach = -math.inf
    for start, end in intervals:
        if merged and start <= reach:
            first, last = merged[-1]
            merged[-1] = (first, max(last, end))
        else:
            merged.append((start, end))
        reach = max(reach, end)
    return merged


def _boundaries(kind: int, intervals: list[tuple[float, float]]) -> Iterator[tuple[float, int]]:
    bit = 1 << kind
    for start, end in intervals:
        if end > start:  # HTA's rounding can leave an empty (even inverted) interval
            yield start, bit
            yield end, -bit


def _time_by_mask(merged: list[list[tuple[float, float]]]) -> list[float]:
    """Time spent in each set of running kinds (a bit mask of kinds)."""
    by_mask = [0.0] * (1 << KINDS)
    mask = 0
    previous = 0.0
    for time, change in heapq.merge(
        *(_boundaries(kind, intervals) for kind, intervals in enumerate(merged))
    ):
        by_mask[mask] += time - previous
        mask += change
        previous = time
    return by_mask
