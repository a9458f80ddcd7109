"""How often each operator and kernel ran in one trace's profiled steps, and for how long.

This is what HTA's ``TraceDiff.compare_traces`` compares: events grouped by name, their
count and summed ``dur``, over the events of a rank's iterations. An event's iteration is
HTA's (``add_iteration``): a CPU event (stream below 0) belongs to the ``ProfilerStep``
whose ``[ts, ts + dur)`` holds its ``ts``; a GPU event (stream above 0) to its launch's;
anything else (stream 0, a GPU event no CPU event launched) to none. Two sets are kept:
every profiled step (``count``, ``total_us``) and the trace's first step, the smallest
step number (``first_*``, HTA's default iteration). HTA names each step's own event
apart (``ProfilerStep#12``), a row per step; here they are one row, ``STEPS``, among all
steps, and the first step's keeps its name among the first step's.

Steps are known only as their events are read, and a step's events may come before it in
the file (a trace written step by step writes the step last). So an event is placed at
once when a step already read holds it (nearly always: the one the previous event fell
in), and otherwise kept as ``(ts, dur, name)`` until a step holding it is read, up to
``MAX_PENDING`` of them (24 bytes each; past that they count in no step). Each step read
places the events kept; those it leaves (events between steps) stay for the next, and
once more than ``RESCAN_LEFT`` are left the rest wait for the end, so the work stays a
few passes over the events. A GPU event is placed when the sweep sees it, every step
known by then. Names are bounded
(``MAX_NAMES``, cut as the kernels' table cuts them; the rest count under ``OTHER``), and so are the rows a trace keeps.
Where steps overlap, an event counts in the one that starts last before it (HTA takes the
last one in the file): PyTorch's steps do not overlap.
"""

from __future__ import annotations

import math
from array import array
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from tracesets.analysis.gpu import as_us
from tracesets.analysis.kernel_stats import LAUNCHED, MAX_NAME_CHARS

#: Distinct names counted per trace; a trace has hundreds.
MAX_NAMES: Final = 8_192
#: Rows a trace keeps: the largest totals, the rest summed under ``OTHER``.
MAX_OPERATOR_ROWS: Final = 1_024
#: Events read before the step holding them, kept until it is.
MAX_PENDING: Final = 1 << 20
#: Events a step leaves waiting past which steps no longer look at them.
RESCAN_LEFT: Final = 4_096
OTHER: Final = "(other)"
#: Every step's own event, in the rows of all steps (the first step's keeps its name).
STEPS: Final = "ProfilerStep#*"


@dataclass(frozen=True, slots=True)
class OperatorRow:
    name: str  # event name as in the trace (cats merged, as TraceDiff groups by name)
    count: int  # events of this name in any profiled step (HTA iteration >= 0)
    total_us: float  # their summed dur
    first_count: int  # events of this name in the trace's first step (HTA's default)
    first_total_us: float


class OperatorCounter:
    """Counts and durations by name and step, fed CPU events as read and GPU events as
    swept; ``gpu_names`` are the kernel fold's names, by the number the sweep gives."""

    def __init__(self, gpu_names: list[str] | None = None) -> None:
        self.gpu_names = [] if gpu_names is None else gpu_names
        self.gpu_cells: list[list[float]] = []  # a GPU name's cell, by its number
        # Per name, [count, total, first step's count, first step's total]: one list, so
        # the event loop's fast path (``RankAccumulator.add_all``) is a lookup and adds.
        self.by_name: dict[str, list[float]] = {}
        self.names: list[str] = []
        self.cells: list[list[float]] = []
        self.first: int | None = None  # the smallest step number read
        # the steps read, by start: 24 bytes each (a trace may have a million)
        self.starts = array("d")
        self.ends = array("d")
        self.numbers = array("q")
        self.low = self.high = math.nan  # the step the last event fell in
        self.current = -1
        self.in_first = False  # that step is the first
        self.pending_ts = array("d")
        self.pending_dur = array("d")
        self.pending_name = array("l")
        self.rescan = True

    def _name(self, name: str) -> int:
        cell = self.by_name.get(name)
        if cell is not None:
            return int(cell[4])
        if len(self.names) >= MAX_NAMES:
            return self._name(OTHER) if name != OTHER else self._new(OTHER)
        return self._new(name)

    def _new(self, name: str) -> int:
        at = len(self.names)
        self.names.append(shown(name))
        cell: list[float] = [0, 0.0, 0, 0.0, at]
        self.cells.append(cell)
        self.by_name[name] = cell
        return at

    def step(self, number: int, name: str, start: float, end: float) -> None:
        """A ``ProfilerStep#number`` read: a step, and an event of the step holding it."""
        at = bisect_right(self.starts, start)
        self.starts.insert(at, start)
        self.ends.insert(at, end)
        self.numbers.insert(at, number)
        if self.first is None or number < self.first:
            self.first = number
            for cell in self.cells:
                cell[2], cell[3] = 0, 0.0
            self.in_first = self.current == number
        if len(self.pending_ts) > 0 and self.rescan:
            self._place_pending()
            self.rescan = len(self.pending_ts) <= RESCAN_LEFT
        held_by = self._step_of(start)
        if held_by >= 0:
            steps = self.cells[self._name(STEPS)]
            steps[0] += 1
            steps[1] += end - start
            if held_by == self.first:
                own = self.cells[self._name(name)]
                own[2] += 1
                own[3] += end - start

    def _step_of(self, ts: float) -> int:
        """The number of the step read that holds ``ts``, -1 if none."""
        at = bisect_right(self.starts, ts) - 1
        if at < 0:
            return -1
        end = self.ends[at]
        if ts >= end:
            return -1
        number = self.numbers[at]
        self.low, self.high, self.current = self.starts[at], end, number
        self.in_first = number == self.first
        return number

    def _add(self, at: int, step: int, dur: float) -> None:
        cell = self.cells[at]
        cell[0] += 1
        cell[1] += dur
        if step == self.first:
            cell[2] += 1
            cell[3] += dur

    def cpu(self, name: str, ts: float, dur: float) -> None:
        """A CPU event (stream below 0): by the step holding ``ts``, now or once read."""
        if self.low <= ts < self.high:
            step = self.current
        else:
            step = self._step_of(ts)
            if step < 0:
                if len(self.pending_ts) < MAX_PENDING:
                    self.pending_ts.append(ts)
                    self.pending_dur.append(dur)
                    self.pending_name.append(self._name(name))
                return
        self._add(self._name(name), step, dur)

    def gpu(self, launched_at: float, code: int, number: int, dur: float) -> None:
        """A GPU event (stream above 0), launched at ``launched_at`` when ``code`` says a
        CPU event launched it."""
        if not code & LAUNCHED:
            return
        if not self.low <= launched_at < self.high and self._step_of(launched_at) < 0:
            return
        cells = self.gpu_cells
        while number >= len(cells):
            cells.append(self.cells[self._name(self.gpu_names[len(cells)])])
        cell = cells[number] if number >= 0 else self.cells[self._name(OTHER)]
        cell[0] += 1
        cell[1] += dur
        if self.in_first:
            cell[2] += 1
            cell[3] += dur

    def gpu_counts(
        self,
        cells: list[tuple[float, float, float, float]],
        other: tuple[float, float, float, float],
    ) -> None:
        """What ``gpu`` would have counted, counted by the compiled pass: per kernel number,
        (count, total, first step's count, its total); ``other`` for names past the bound."""
        named = [(self.gpu_names[number], cell) for number, cell in enumerate(cells) if cell[0]]
        for name, (count, total, first_count, first_total) in [*named, (OTHER, other)]:
            if count:
                cell = self.cells[self._name(name)]
                cell[0] += int(count)
                cell[1] += total
                cell[2] += int(first_count)
                cell[3] += first_total

    def _place_pending(self) -> None:
        """Count the events kept that a step read holds; keep the others."""
        left_ts, left_dur, left_name = array("d"), array("d"), array("l")
        for ts, dur, at in zip(self.pending_ts, self.pending_dur, self.pending_name, strict=True):
            step = self._step_of(ts)
            if step >= 0:
                self._add(at, step, dur)
            else:
                left_ts.append(ts)
                left_dur.append(dur)
                left_name.append(at)
        self.pending_ts, self.pending_dur, self.pending_name = left_ts, left_dur, left_name

    def steps(
        self,
    ) -> tuple[array[float], array[float], array[int], int | None, float, float, bool]:
        """The steps read and the one the last event fell in, for the compiled sweep."""
        return (
            self.starts,
            self.ends,
            self.numbers,
            self.first,
            self.low,
            self.high,
            self.in_first,
        )

    def rows(self) -> list[OperatorRow]:
        """Every name that ran in a step, the largest totals first, bounded."""
        self._place_pending()
        other = self.by_name.get(OTHER)
        return operator_rows(self.names, self.cells, None if other is None else int(other[4]))


def operator_rows(
    names: list[str], cells: Sequence[Sequence[float]], other: int | None
) -> list[OperatorRow]:
    """The rows of the cells that ran in a step, the largest totals first, at most
    ``MAX_OPERATOR_ROWS``; ``other`` the index of the cell of names past the bound."""
    ranked = sorted(
        (i for i, c in enumerate(cells) if (c[0] or c[2]) and i != other),
        key=lambda i: (-cells[i][1], -cells[i][3], names[i]),
    )
    rest = [] if other is None else [other]  # names past the bound are "other" already
    if len(ranked) + len(rest) > MAX_OPERATOR_ROWS:
        rest += ranked[MAX_OPERATOR_ROWS - 1 :]
        ranked = ranked[: MAX_OPERATOR_ROWS - 1]
    rows = [_row(names[i], [cells[i]]) for i in ranked]
    if rest:
        rows.append(_row(OTHER, [cells[i] for i in rest]))
    return rows


def _row(name: str, cells: list[Sequence[float]]) -> OperatorRow:
    return OperatorRow(
        name=name,
        count=int(sum(c[0] for c in cells)),
        total_us=as_us(sum(c[1] for c in cells)),
        first_count=int(sum(c[2] for c in cells)),
        first_total_us=as_us(sum(c[3] for c in cells)),
    )


def shown(name: str) -> str:
    """A name as a row shows it: cut past ``MAX_NAME_CHARS``, as the kernels' table cuts them."""
    return name if len(name) <= MAX_NAME_CHARS else name[: MAX_NAME_CHARS - 1] + "…"
