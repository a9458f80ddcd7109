"""Comparing two inspected tracesets from the figures their inspections stored: pure.

Nothing here reads a trace: each side is its inspection's per-rank figures (the objects
``analysis.report.rank_json`` made, as ``inspection_ranks`` keeps them), its medians
over ranks (``tracesets.performance``) and its operator rows (``inspection_operators``).
Ranks are matched by rank number; a trace without a rank matches nothing and is left
out. Tracesets of different rank counts compare on their aggregates only. Every answer
is in camelCase, as the per-rank figures are.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import orjson

from tracesets.analysis.operators import OTHER as OTHER_OPERATOR
from tracesets.analysis.operators import OperatorRow
from tracesets.performance import Performance
from tracesets.service.cursors import CursorKind, encode_cursor

#: The temporal breakdown of a rank, as its figures' ``gpu`` names it.
BREAKDOWN: Final = ("idleUs", "computeUs", "nonComputeUs", "idlePct", "computePct", "nonComputePct")
#: How many contributors the headline names.
CONTRIBUTORS: Final = 3
#: The kernel row standing for every kernel a rank did not list (``topKernels``' last):
#: not one kernel, so in no comparison.
OTHER_KERNEL: Final = "other"
#: The step annotations: a slower step's own row says it is slower, not why.
STEP_PREFIX: Final = "ProfilerStep#"
#: A page of a comparison stops before its JSON passes this many bytes (a kernel's name
#: may hold 4,096 characters, 24 KiB once escaped).
PAGE_BYTES: Final = 4 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class Side:
    """What one traceset's inspection stored, as a comparison reads it."""

    traceset_id: str
    performance: Performance
    figures: Sequence[Mapping[str, Any]]
    operators: Sequence[OperatorRow] = field(default_factory=list)

    def by_rank(self) -> dict[int, Mapping[str, Any]]:
        """Each rank's figures; of two traces claiming a rank, the first in rank order."""
        ranks: dict[int, Mapping[str, Any]] = {}
        for figures in self.figures:
            rank = figures.get("rank")
            if isinstance(rank, int) and rank not in ranks:
                ranks[rank] = figures
        return ranks


def _ratio(value: float | None, baseline: float | None) -> float | None:
    if value is None or baseline is None or baseline == 0:
        return None
    return round(value / baseline, 4)


def _points(value: float | None, baseline: float | None) -> float | None:
    return None if value is None or baseline is None else round(value - baseline, 2)


def _step_ms(figures: Mapping[str, Any]) -> float | None:
    median = (figures.get("steps") or {}).get("medianUs")
    return None if median is None else median / 1000


def breakdown(figures: Mapping[str, Any]) -> dict[str, Any]:
    """One rank's temporal breakdown (nulls without GPU events) and its median step."""
    gpu = figures.get("gpu") or {}
    return {**{name: gpu.get(name) for name in BREAKDOWN}, "stepMs": _step_ms(figures)}


def _difference(ours: dict[str, Any], theirs: dict[str, Any]) -> dict[str, Any]:
    diff: dict[str, Any] = {}
    for name in BREAKDOWN:
        a, b = ours[name], theirs[name]
        diff[name] = None if a is None or b is None else round(a - b, 2 if "Pct" in name else 3)
    return diff


def rank_rows(side: Side, baseline: Side) -> list[dict[str, Any]]:
    """A row per rank number either side has, in rank order."""
    ours, theirs = side.by_rank(), baseline.by_rank()
    rows: list[dict[str, Any]] = []
    for rank in sorted(ours.keys() | theirs.keys()):
        a = breakdown(ours[rank]) if rank in ours else None
        b = breakdown(theirs[rank]) if rank in theirs else None
        present = "both" if a and b else "traceset" if a else "baseline"
        rows.append(
            {
                "rank": rank,
                "present": present,
                "traceset": a,
                "baseline": b,
                "diff": _difference(a, b) if a and b else None,
                "stepRatio": _ratio(a["stepMs"], b["stepMs"]) if a and b else None,
            }
        )
    return rows


def _kernel_sums(figures: Iterable[Mapping[str, Any]]) -> dict[str, tuple[str, int, float]]:
    """Each kernel's (type, count, time) summed over the ranks listing it in ``topKernels``."""
    sums: dict[str, tuple[str, int, float]] = {}
    for rank in figures:
        for kernel in rank.get("topKernels") or ():
            name = kernel["name"]
            if name == OTHER_KERNEL:
                continue
            kind, count, total = sums.get(name, (kernel["type"], 0, 0.0))
            sums[name] = (kind, count + kernel["count"], total + kernel["sumUs"])
    return sums


def _by_change(row: dict[str, Any], key: str) -> tuple[float, str]:
    return (-abs(row[key]), row["name"])


def kernel_rows(side: Side, baseline: Side) -> list[dict[str, Any]]:
    """The union of both sides' top kernels, by absolute difference in time, then name."""
    ours, theirs = _kernel_sums(side.figures), _kernel_sums(baseline.figures)
    rows = []
    for name in ours.keys() | theirs.keys():
        kind, count, total = ours.get(name) or (theirs[name][0], 0, 0.0)
        _, their_count, their_total = theirs.get(name) or (kind, 0, 0.0)
        rows.append(
            {
                "name": name,
                "type": kind,
                "count": count,
                "baselineCount": their_count,
                "sumUs": total,
                "baselineSumUs": their_total,
                "diffUs": total - their_total,
            }
        )
    rows.sort(key=lambda row: _by_change(row, "diffUs"))
    return rows


def operator_rows(side: Side, baseline: Side, *, first: bool) -> list[dict[str, Any]]:
    """Each operator (and kernel) name of either side: its count and time on each side,
    every profiled step of every rank, or (``first``) the first step of the first rank,
    by absolute difference in time, then name."""

    def figures(row: OperatorRow) -> tuple[int, float]:
        return (row.first_count, row.first_total_us) if first else (row.count, row.total_us)

    ours = {row.name: figures(row) for row in side.operators}
    theirs = {row.name: figures(row) for row in baseline.operators}
    rows = []
    for name in ours.keys() | theirs.keys():
        count, total = ours.get(name, (0, 0.0))
        their_count, their_total = theirs.get(name, (0, 0.0))
        if count == their_count == 0:
            continue  # an operator of other steps only, asked about the first
        rows.append(
            {
                "name": name,
                "baselineCount": their_count,
                "baselineTotalUs": their_total,
                "count": count,
                "totalUs": total,
                "countDiff": count - their_count,
                "totalUsDiff": total - their_total,
            }
        )
    rows.sort(key=lambda row: _by_change(row, "totalUsDiff"))
    return rows


def contributors(
    kernels: Sequence[Mapping[str, Any]], operators: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """The kernels or operators whose time changed most: an operator named as a kernel
    (HTA's operator rows hold the kernels too) counts once, as the kernel; the steps
    themselves and ``(other)`` are no contributors."""
    found = [
        {"kind": "kernel", "name": row["name"], "diffUs": row["diffUs"]}
        for row in kernels[:CONTRIBUTORS]
    ]
    named = {row["name"] for row in kernels}
    found += [
        {"kind": "operator", "name": row["name"], "diffUs": row["totalUsDiff"]}
        for row in operators
        if row["name"] not in named
        and row["name"] != OTHER_OPERATOR
        and not row["name"].startswith(STEP_PREFIX)
    ][:CONTRIBUTORS]
    found.sort(key=lambda row: _by_change(row, "diffUs"))
    return [row for row in found if row["diffUs"] != 0][:CONTRIBUTORS]


def headline(
    ours: Performance,
    theirs: Performance,
    kernels: Sequence[Mapping[str, Any]],
    operators: Sequence[Mapping[str, Any]],
) -> dict[str, Any]:
    """The medians over ranks of each side, how they differ, and what changed most."""
    return {
        "stepMs": ours.step_ms,
        "baselineStepMs": theirs.step_ms,
        "stepRatio": _ratio(ours.step_ms, theirs.step_ms),
        "gpuIdlePct": ours.gpu_idle_pct,
        "baselineGpuIdlePct": theirs.gpu_idle_pct,
        "gpuIdleDiffPct": _points(ours.gpu_idle_pct, theirs.gpu_idle_pct),
        "commOverlapPct": ours.comm_overlap_pct,
        "baselineCommOverlapPct": theirs.comm_overlap_pct,
        "commOverlapDiffPct": _points(ours.comm_overlap_pct, theirs.comm_overlap_pct),
        "contributors": contributors(kernels, operators),
    }


def page(
    rows: Sequence[Mapping[str, Any]], start: int, limit: int, kind: CursorKind
) -> tuple[list[orjson.Fragment], str | None]:
    """Rows from ``start``: ``limit`` of them, fewer when their JSON would pass
    ``PAGE_BYTES`` (at least one), and the cursor of the first one left out."""
    kept: list[orjson.Fragment] = []
    used = 0
    for position in range(start, min(start + limit, len(rows))):
        text = orjson.dumps(rows[position])
        used += len(text) + 1
        if kept and used > PAGE_BYTES:
            return kept, encode_cursor(kind, position)
        kept.append(orjson.Fragment(text))
    after = start + len(kept)
    return kept, encode_cursor(kind, after) if after < len(rows) else None
