"""A rank's pass compiled (``native/``), and the choice of it.

Per event, the reference (``RankAccumulator.add_all``, ``operators.OperatorCounter``,
``kernels.GpuEvents``, ``gpu.sweep``, ``KernelFold``) runs a few dozen lines of Python:
fields read and checked, dicts looked up, a tuple built, sorted, swept and folded. That
was three quarters of the pass's CPU time on a rank's trace, and no rewrite in Python
came near what ``bench/analyze_traces.py`` asks (half of ``gzip -dc``'s speed). The C
does the same steps, branch for branch: the same reading of each field, the same
windows of launches, the same spills in sorted runs to an unlinked file, the same sweep.
Steps and collectives (a few per training step) are handed back to the reference's own
methods, and the figures are built here by the reference's code (``_breakdown``,
``KernelFold.result``, ``operator_rows``). ``tests/analysis/test_compiled.py`` runs
every trace the tests hold, and events of every shape, through both.

The C holds the GIL a batch of events at a time (a fraction of a millisecond) and
releases it for the pairing and the sweep at the end, which touch no Python object: a
service inspecting a rank of gigabytes in a thread keeps answering meanwhile.

The extension is optional (``setup.py``): where it was not built, ``sinks`` gives the
reference, with the same figures.
"""

from __future__ import annotations

import math
import tempfile
from typing import TYPE_CHECKING

from tracesets.analysis import distribution, kernels, spill
from tracesets.analysis import operators as counting
from tracesets.analysis.gpu import GpuTime, _breakdown
from tracesets.analysis.kernel_stats import TRACKED_STREAMS, KernelFold, KernelStats, _Stream
from tracesets.analysis.kernels import GpuEvents, known_kind
from tracesets.analysis.operators import (
    OTHER,
    STEPS,
    OperatorCounter,
    OperatorRow,
    operator_rows,
    shown,
)

__all__ = ["NATIVE", "CompiledGpuEvents", "CompiledOperators", "configure", "fold_events", "sinks"]

try:
    from tracesets.analysis._native import Core, Operators, configure, fold_events
except ImportError:  # not built: no C compiler where it was installed
    NATIVE = False
    if not TYPE_CHECKING:
        Core = Operators = object
        configure = fold_events = None
else:
    NATIVE = True


class CompiledGpuEvents(Core):
    """``kernels.GpuEvents``'s interface and figures, its work per event in C."""

    def __init__(
        self,
        *,
        window: int | None = None,
        buffer: int | None = None,
        fan_in: int | None = None,
        operators: OperatorCounter | CompiledOperators | None = None,
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
            tempfile.gettempdir(),
        )

    def _resolve(self, name: str) -> int:
        """A kernel name's code for the C side: its number in the fold, and its kind."""
        kind = known_kind(name)
        return self.fold.name(name, kind) << 2 | kind

    def time(self, last_step: float | None) -> tuple[GpuTime, KernelStats] | None:
        """The breakdown and the kernels' figures, as ``GpuEvents.time``."""
        ops = self.operators
        try:
            swept = self.finish(
                last_step, None if ops is None else ops.steps(), TRACKED_STREAMS, distribution.EXACT
            )
        finally:
            self.close()
        (count, by_mask, first, group_end, busy, moments, unnamed, streams) = swept[:8]
        short, long_delays, long_runtimes, cells, other, calls, runs, delays = swept[8:]
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
        fold.cpu.restore(*calls)
        fold.gpu.restore(*runs)
        fold.delay.restore(*delays)
        return _breakdown(by_mask, group_end - first, busy, count), fold.result(by_mask)


class CompiledOperators(Operators):
    """``operators.OperatorCounter``'s interface and rows, its work per event in C."""

    def __init__(self) -> None:
        super().__init__(
            shown,
            OTHER,
            STEPS,
            counting.MAX_NAMES,  # read when called: tests set them
            counting.MAX_PENDING,
            counting.RESCAN_LEFT,
        )
        self.gpu_names: list[str] = []

    def gpu_counts(
        self,
        cells: list[tuple[float, float, float, float]],
        other: tuple[float, float, float, float],
    ) -> None:
        """What the sweep counted, by kernel number (``OperatorCounter.gpu_counts``)."""
        named = [(self.gpu_names[number], cell) for number, cell in enumerate(cells) if cell[0]]
        for name, cell in [*named, (OTHER, other)]:
            if cell[0]:
                self.add_cell(name, *cell)

    def rows(self) -> list[OperatorRow]:
        self.settle()
        other = self.by_name.get(OTHER)
        return operator_rows(self.names, self.cells(), other)


Sinks = tuple[OperatorCounter, GpuEvents] | tuple[CompiledOperators, CompiledGpuEvents]


def sinks() -> Sinks:
    """A rank's operator counts and GPU events: compiled where the extension was built,
    else the reference."""
    if NATIVE:
        ops = CompiledOperators()
        return ops, CompiledGpuEvents(operators=ops)
    reference = OperatorCounter()
    return reference, GpuEvents(operators=reference)
