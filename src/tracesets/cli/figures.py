"""``tracesets inspect``'s per-rank figures: the same analysis the service runs after
``complete``, on local files, shown as a table or as the inspection's JSON members."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tracesets.cli.tables import Rows

if TYPE_CHECKING:  # the analysis is imported when it runs: every command starts without it
    from tracesets.analysis.report import TracesetAnalysis


def json_members(analysis: TracesetAnalysis) -> dict[str, Any]:
    """The inspection's per-rank members, with every rank (no page is needed locally)."""
    return {**analysis.inline(), "perRank": analysis.ranks}


def _number(value: float | None, scale: float = 1, digits: int = 2) -> str:
    return "" if value is None else f"{value / scale:,.{digits}f}"


def figure_rows(analysis: TracesetAnalysis) -> Rows:
    """The per-rank figures, a row a trace (``tables.print_rows`` prints them), with the
    file it is in: a duplicated rank's rows are told apart by it."""
    rows = []
    for figures in analysis.ranks:
        gpu = figures["gpu"] or {}
        steps = figures["steps"]
        collectives = sum(
            op["count"] for group in figures["collectives"] for op in group["ops"].values()
        )
        rank = "" if figures["rank"] is None else str(figures["rank"])
        member = figures["member"]
        rows.append(
            [
                rank + (" (straggler)" if figures["straggler"] else ""),
                figures["file"] + (f"!{member}" if member else ""),
                str(steps["count"]),
                _number(steps["medianUs"], 1000, 1),
                _number(gpu.get("computePct")),
                _number(gpu.get("nonComputePct")),
                _number(gpu.get("idlePct")),
                _number(gpu.get("overlapPct")),
                f"{collectives:,}",
                figures["problem"] or ("no GPU events" if not gpu else ""),
            ]
        )
    return Rows(
        ["rank", "file", "steps", "step ms", "comp %", "comm+mem %", "idle %", "overlap %", "colls",
         "problem"],
        rows,
        title="per-rank figures (step ms: median; GPU time as HTA counts it)",
    )  # fmt: skip


def _us(value: float) -> str:
    return f"{value:,.1f}"


def _share(idle: dict[str, Any], cause: str) -> str:
    """A cause's µs, and its share of the stream's idle time when that is positive."""
    us, pct = _us(idle[f"{cause}Us"]), idle[f"{cause}Pct"]
    return us if pct is None else f"{us} ({pct:.2f} %)"


def idle_rows(analysis: TracesetAnalysis) -> Rows:
    """Each rank's idle time by cause on its streams idle longest (HTA's idle breakdown)."""
    rows = [
        [
            "" if figures["rank"] is None else str(figures["rank"]),
            str(idle["stream"]),
            *(_share(idle, cause) for cause in ("hostWait", "kernelWait", "other")),
        ]
        for figures in analysis.ranks
        for idle in figures["idleBreakdown"]
    ]
    return Rows(
        ["rank", "stream", "host wait µs (%)", "kernel wait µs (%)", "other µs (%)"],
        rows,
        title="idle time by cause (host wait: launched after the stream went idle; "
        "kernel wait: other gaps under 30 µs)",
    )


def kernel_rows(analysis: TracesetAnalysis) -> Rows:
    """Each rank's top kernels, then ``other``, as ``--kernels`` prints them."""
    rows = [
        [
            "" if figures["rank"] is None else str(figures["rank"]),
            kernel["name"],
            kernel["type"],
            f"{kernel['count']:,}",
            *(_us(kernel[m]) for m in ("sumUs", "meanUs", "minUs", "maxUs", "stddevUs")),
        ]
        for figures in analysis.ranks
        for kernel in figures["topKernels"]
    ]
    return Rows(
        ["rank", "kernel", "type", "count", "sum µs", "mean µs", "min µs", "max µs", "stddev µs"],
        rows,
        title="top kernels per rank (the 20 of most time, then other)",
    )
