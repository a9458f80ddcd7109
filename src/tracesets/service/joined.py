"""An inspection's result from its files' recorded results: the traceset's checks.

Run once per inspection, by the process that records its last file, inside that
transaction (``tracesets.service.inspections``): each file's findings and figures come
back from their stored JSON, in file order, and go through the same summary and checks
across ranks as ``tracesets inspect`` runs on local files.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Final

import orjson
from sqlalchemy import Connection

from tracesets.analysis import TraceAnalysis
from tracesets.analysis import stored as stored_analysis
from tracesets.analysis.checks import declared_parallelism
from tracesets.analysis.operators import OperatorRow
from tracesets.analysis.report import analyse_traceset
from tracesets.db import inspection_files as claims
from tracesets.inspection import FileFinding, summarize
from tracesets.inspection.report import empty_json, result_json
from tracesets.performance import UNKNOWN, Performance, of_ranks
from tracesets.service.operators import traceset_operators

#: How a failed inspection's one warning starts; its reason follows.
FAILURE_PREFIX: Final = "The traces could not be inspected: "


def failure_json(reason: str) -> bytes:
    return empty_json([FAILURE_PREFIX + reason])


@dataclass(frozen=True, slots=True)
class Joined:
    """An inspection's outcome: its status and JSON, its verdicts, every trace's figures
    (JSON), their medians, and the traceset's operator rows."""

    status: str
    result: bytes
    ok: bool | None
    consistent: bool | None
    ranks: list[bytes] = field(default_factory=list)
    performance: Performance = UNKNOWN
    operators: list[OperatorRow] = field(default_factory=list)


def failed(reason: str) -> Joined:
    return Joined("failed", failure_json(reason), False, None)


def join_results(conn: Connection, seq: int) -> Joined | None:
    """The inspection of every file's recorded result: (status, JSON, ok, consistent,
    per-rank figures, their medians). None when the traceset is gone."""
    traceset = claims.traceset_of(conn, seq)
    if traceset is None:
        return None
    rank_count, metadata_text = traceset
    return join(rank_count, metadata_text, claims.results(conn, seq))


def join(
    rank_count: int | None,
    metadata_text: str | bytes | None,
    results: Iterable[tuple[str, str, str]],
) -> Joined:
    """The inspection of recorded file ``results`` (name, status, stored JSON or why it
    failed), in file order, against the declared rank count and metadata."""
    findings: list[FileFinding] = []
    traces: list[TraceAnalysis] = []
    for name, status, result in results:
        if status == "failed":
            return failed(f"{name}: {result}")
        found, analysed = stored_analysis.loads(result)
        findings.extend(found)
        traces.extend(analysed)
    summary = summarize(findings, declared_rank_count=rank_count)
    metadata = orjson.loads(metadata_text) if metadata_text else None
    analysis = analyse_traceset(
        findings,
        traces,
        parallelism=declared_parallelism(metadata),
        world_size=summary.world_size or rank_count,
    )
    summary = replace(summary, warnings=[*summary.warnings, *analysis.checks.warnings])
    rank_of = {finding.label: finding.rank for finding in findings}
    return Joined(
        "done",
        result_json(summary, findings, analysis.inline()),
        not summary.warnings,
        not analysis.checks.warnings,
        [orjson.dumps(figures) for figures in analysis.ranks],
        of_ranks(analysis.ranks),
        traceset_operators([(rank_of.get(t.label), t.analysis.operators) for t in traces]),
    )
