"""A traceset's operator rows from its traces' own: what ``inspection_operators`` keeps.

Counts and times are summed over every trace (every profiled step of every rank); the
first-step figures are the first rank's alone (the lowest rank number, HTA's default
rank; the first trace when none has a rank). At most ``MAX_TRACESET_OPERATORS`` rows, the
largest total time first: the rest are summed in one ``(other)`` row, as a trace's are.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from tracesets.analysis.operators import OTHER, OperatorRow

#: Rows a traceset keeps; a trace keeps ``analysis.operators.MAX_OPERATOR_ROWS``.
MAX_TRACESET_OPERATORS: Final = 4096


def first_trace(ranked: Sequence[tuple[int | None, list[OperatorRow]]]) -> int | None:
    """The position of the trace of the lowest rank (the first one when none has a rank)."""
    if not ranked:
        return None
    with_rank = [(rank, position) for position, (rank, _) in enumerate(ranked) if rank is not None]
    return min(with_rank)[1] if with_rank else 0


def traceset_operators(ranked: Sequence[tuple[int | None, list[OperatorRow]]]) -> list[OperatorRow]:
    """The rows of traces given as (rank, their rows), summed as the module says."""
    first = first_trace(ranked)
    sums: dict[str, list[float]] = {}
    for position, (_, rows) in enumerate(ranked):
        for row in rows:
            summed = sums.setdefault(row.name, [0, 0.0, 0, 0.0])
            summed[0] += row.count
            summed[1] += row.total_us
            if position == first:
                summed[2] += row.first_count
                summed[3] += row.first_total_us
    ordered = sorted(sums.items(), key=lambda item: (item[0] == OTHER, -item[1][1], item[0]))
    kept = [name for name, _ in ordered if name != OTHER][: MAX_TRACESET_OPERATORS - 1]
    rows = [_row(name, sums[name]) for name in kept]
    shown = set(kept)
    rest = [figures for name, figures in ordered if name not in shown]
    if rest:
        rows.append(_row(OTHER, [sum(f[i] for f in rest) for i in range(4)]))
    return rows


def _row(name: str, summed: list[float]) -> OperatorRow:
    return OperatorRow(name, int(summed[0]), float(summed[1]), int(summed[2]), float(summed[3]))
