"""A traceset's performance figures: the medians over its ranks of their per-rank figures.

Computed once, when its inspection is done, from the per-rank JSON objects the inspection
stores (``perRank``): the list filters and sorts on them from their indexed columns
(``vocabulary.FIGURES``), where reading every rank's figures per listed traceset could
not. Medians, not means, so that one straggler or one rank without GPU work does not
move a traceset's figure; a rank without the figure (no GPU events, no communication, no
step) is left out of its median, and with no rank having it the figure is None.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from typing import Any, Final


@dataclass(frozen=True, slots=True)
class Performance:
    """Named as the inspection's columns are; None is unknown (never matches a filter)."""

    gpu_idle_pct: float | None = None
    comm_overlap_pct: float | None = None
    step_ms: float | None = None
    has_stragglers: bool | None = None


#: No figure known: an inspection not done, failed, or without per-rank figures.
UNKNOWN: Final = Performance()
#: The inspection's columns that hold them (migration 0013), one per field.
COLUMNS: Final = tuple(f.name for f in fields(Performance))


def _median(values: list[float]) -> float | None:
    return float(statistics.median(values)) if values else None


def _number(value: object) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return None


def of_ranks(ranks: Iterable[Mapping[str, Any]]) -> Performance:
    """The figures of per-rank objects (``analysis.report.rank_json``'s shape); without
    any rank, every figure is None (``has_stragglers`` too: no rank was compared)."""
    idle: list[float] = []
    overlap: list[float] = []
    step_ms: list[float] = []
    counted, straggles = 0, False
    for rank in ranks:
        counted += 1
        straggles = straggles or rank.get("straggler") is True
        gpu = rank.get("gpu")
        if isinstance(gpu, Mapping):
            if (pct := _number(gpu.get("idlePct"))) is not None:
                idle.append(pct)
            if (pct := _number(gpu.get("overlapPct"))) is not None:
                overlap.append(pct)
        steps = rank.get("steps")
        if isinstance(steps, Mapping) and (us := _number(steps.get("medianUs"))) is not None:
            step_ms.append(us / 1000)
    return Performance(
        gpu_idle_pct=_median(idle),
        comm_overlap_pct=_median(overlap),
        step_ms=_median(step_ms),
        has_stragglers=straggles if counted else None,
    )
