"""An inspection as the API and ``tracesets inspect --json`` show it (camelCase JSON)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import orjson

from tracesets.inspection.findings import FileFinding
from tracesets.inspection.summary import Summary


def _finding(finding: FileFinding) -> dict[str, Any]:
    return {
        "file": finding.file,
        "member": finding.member,
        "format": finding.format,
        "size": finding.size,
        "rank": finding.rank,
        "worldSize": finding.world_size,
        "backend": finding.backend,
        "rankSource": finding.rank_source,
        "problem": finding.problem,
    }


#: The per-rank members of an inspection that has no per-rank figures (yet).
NO_ANALYSIS: Final[Mapping[str, Any]] = {
    "perRank": [],
    "perRankCount": 0,
    "stragglers": [],
    "desyncedGroups": [],
    "kernelSpread": [],
    "regression": None,
}


def result_json(
    summary: Summary,
    findings: list[FileFinding],
    analysis: Mapping[str, Any] | None = None,
    *,
    indent: bool = False,
) -> bytes:
    """The inspection as the API shows it (less its status), with the per-rank members of
    ``tracesets.analysis.report``; ``indent``ed for people (``tracesets inspect --json``),
    written so at once, not parsed back to be indented: 4.8 MB for a job of 4,096 ranks."""
    return orjson.dumps(
        {
            "ranksFound": summary.ranks_found,
            "worldSize": summary.world_size,
            "worldSizes": summary.world_sizes,
            "missingRanks": summary.missing_ranks,
            "missingRankCount": summary.missing_rank_count,
            "duplicateRanks": summary.duplicate_ranks,
            "unreadable": summary.unreadable,
            "warnings": summary.warnings,
            "files": [_finding(f) for f in findings],
            **(NO_ANALYSIS if analysis is None else analysis),
        },
        option=orjson.OPT_INDENT_2 if indent else None,
    )


def empty_json(warnings: list[str]) -> bytes:
    """An inspection that found nothing: not run yet, or failed (``warnings`` says why)."""
    return result_json(
        Summary(
            ranks_found=[],
            world_sizes=[],
            world_size=None,
            missing_ranks=[],
            duplicate_ranks=[],
            unreadable=[],
            warnings=warnings,
        ),
        [],
    )
