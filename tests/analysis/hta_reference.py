"""Holistic Trace Analysis's own figures for a directory of rank traces, for comparison."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from hta.trace_analysis import TraceAnalysis


def hta_figures(directory: Path) -> dict[int, dict[str, Any]]:
    """Per rank: HTA's temporal breakdown percentages and its comm/comp overlap."""
    hta_logger = logging.getLogger("hta")
    level = hta_logger.level
    hta_logger.setLevel(logging.ERROR)  # HTA logs every file it parses at WARNING
    try:
        analysis = TraceAnalysis(trace_dir=str(directory))
        breakdown = analysis.get_temporal_breakdown(visualize=False)
        overlap = analysis.get_comm_comp_overlap(visualize=False)
    finally:
        hta_logger.setLevel(level)
    figures: dict[int, dict[str, Any]] = {}
    for row in breakdown.to_dict("records"):
        figures[int(row["rank"])] = {
            "idlePct": float(row["idle_time_pctg"]),
            "computePct": float(row["compute_time_pctg"]),
            "nonComputePct": float(row["non_compute_time_pctg"]),
            "kernelUs": float(row["kernel_time(us)"]),
        }
    for row in overlap.to_dict("records"):
        figures[int(row["rank"])]["overlapPct"] = float(row["comp_comm_overlap_pctg"])
    return figures
