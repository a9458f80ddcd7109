"""The GPU half of a rank's pass compiled (``native/``), and the choice of it.

Per GPU event, the reference (``kernels.GpuEvents``, ``gpu.sweep``, ``KernelFold``) runs
a few dozen lines of Python: a tuple built, dicts looked up, a record sorted, swept and
folded. That is two thirds of the pass's CPU time on a rank's trace, and no rewrite in
Python came near what ``bench/analyze_traces.py`` asks (half of ``gzip -dc``'s speed).
``native/`` does the same steps in C, step for step: the same windows of launches, the
same spills in sorted runs to an unlinked file, the same sweep; the figures are then
built here by the reference's own code (``_breakdown``, ``KernelFold.result``,
``OperatorCounter.rows``). The tests run every trace through both
(``tests/analysis/test_compiled.py``).

The extension is optional (``setup.py``): where it was not built, ``gpu_events`` gives
the reference, with the same figures.
"""

from __future__ import annotations

import math
import tempfile
from array import array
from typing import TYPE_CHECKING

from tracesets.analysis import kernels, spill
from tracesets.analysis.gpu import GpuTime, _breakdown
from tracesets.analysis.kernel_stats import TRACKED_STREAMS, KernelFold, KernelStats, _Stream
from tracesets.analysis.kernels import GpuEvents, known_kind
from tracesets.analysis.operators import OperatorCounter

if TYPE_CHECKING:
    from tracesets.analysis.rank import GpuSink

try:
    from tracesets.analysis._native import Core
except ImportError:  # not built: no C compiler where it was installed
    NATIVE = False
    if not TYPE_CHECKING:
        Core = object
else:
    NATIVE = True


def _doubles(data: bytes) -> array[float]:
    values = array("d")
    values.frombytes(data)
    return values


class CompiledGpuEvents(Core):
    """``kernels.GpuEvents``'s interface and figures, its work per event in C."""

    def __init__(
        self,
        *,
        window: int | None = None,
        buffer: int | None = None,
        fan_in: int | None = None,
        operators: OperatorCounter | None = None,
    ) -> None:
        self.fold = KernelFold()
        self.operators = operators
        if operators is not None:
            operators.gpu_names = self.fold.names
        super().__init__(
            kernels.WINDOW if window is None else window,  # read when called: tests set them
            spill.BUFFER if buffer is None else buffer,
            spill.FAN_IN if fan_in is None else fan_in,
            self._resolve,
            self._flush,
            tempfile.gettempdir(),
        )

    def _resolve(self, name: str) -> int:
        """A kernel name's code for the C side: its number in the fold, and its kind."""
        kind = known_kind(name)
        return self.fold.name(name, kind) << 2 | kind

    def _flush(self, calls: bytes, runs: bytes, delays: bytes) -> None:
        fold = self.fold
        fold.cpu.add_all(_doubles(calls))
        fold.gpu.add_all(_doubles(runs))
        fold.delay.add_all(_doubles(delays))

    def time(self, last_step: float | None) -> tuple[GpuTime, KernelStats] | None:
        """The breakdown and the kernels' figures, as ``GpuEvents.time``."""
        ops = self.operators
        steps = (
            None
            if ops is None
            else (ops.starts, ops.ends, ops.numbers, ops.first, ops.low, ops.high, ops.in_first)
        )
        try:
            swept = self.finish(last_step, steps, TRACKED_STREAMS)
        finally:
            self.close()
        (count, by_mask, first, group_end, busy, moments, unnamed, streams) = swept[:8]
        short, long_delays, long_runtimes, cells, other = swept[8:]
        if ops is not None:
            ops.gpu_counts(cells, other)
        if count == 0:
            return None
        fold = self.fold
        for kept, figures in zip(fold.moments, moments, strict=False):
            kept.restore(figures)
        fold.unnamed.restore(unnamed)
        for stream, host, kernel, other_us in streams:
            idle = fold.streams[stream] = _Stream()
            idle.end, idle.host, idle.kernel, idle.other = math.nan, host, kernel, other_us
        fold.short, fold.long_delays, fold.long_runtimes = short, long_delays, long_runtimes
        return _breakdown(by_mask, group_end - first, busy, count), fold.result(by_mask)


def gpu_events(operators: OperatorCounter | None = None) -> GpuSink:
    """A rank's GPU events: compiled where the extension was built, else the reference."""
    if NATIVE:
        return CompiledGpuEvents(operators=operators)
    return GpuEvents(operators=operators)
