"""Inspecting completed tracesets in the background, in whichever process is free.

``complete`` queues an inspection in the same transaction that makes the traceset
ready; every service process runs an ``InspectionQueue`` that claims queued work from
the database, reads the trace files through the store (ranged reads; a file is
streamed, never held) and records what they say: each trace's claim from its head or
tail, then its per-rank figures from one pass over its events (``tracesets.analysis``).
The claim is renewed between files (every ``RENEW_EVERY`` seconds), so a long traceset
keeps it; a process that dies mid-inspection leaves a claim that goes stale, and another
process takes it over; after three failed runs the inspection is recorded as failed with the reason.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Final

import orjson

from tracesets.analysis import TraceAnalysis, analyze_file
from tracesets.analysis.checks import declared_parallelism
from tracesets.analysis.report import TracesetAnalysis, analyse_traceset
from tracesets.db import queries
from tracesets.db.engine import Database
from tracesets.inspection import FileFinding, Summary, inspect_file, summarize
from tracesets.inspection.report import empty_json, result_json
from tracesets.records import Traceset
from tracesets.storage.base import BlobStore

log = logging.getLogger("tracesets.inspection")

STALE_AFTER: Final = timedelta(minutes=10)
#: Seconds between renewals of a running inspection's claim (a tenth of STALE_AFTER).
RENEW_EVERY: Final = STALE_AFTER.total_seconds() / 10
MAX_ATTEMPTS: Final = 3
IDLE_SECONDS: Final = 2.0


def failure_json(reason: str) -> bytes:
    return empty_json([f"The traces could not be inspected: {reason}"])


#: Promotion's warning while the traces are still being read: their disagreements, if
#: any, are not among the warnings yet.
NOT_FINISHED: Final = (
    "The traces' inspection has not finished, so what they say against the declared rank "
    "count is not among these warnings; read the traceset again once inspection.status is "
    "done (the Python client's wait_for_inspection does)."
)


def inspection_warnings(traceset: Traceset) -> list[str]:
    """The disagreements a finished inspection found (for promotion's warnings), or that
    it has not finished."""
    inspection = traceset.inspection
    if inspection is not None and inspection.status in ("pending", "running"):
        return [NOT_FINISHED]
    if inspection is None or inspection.status != "done" or inspection.result is None:
        return []
    warnings: list[str] = orjson.loads(inspection.result)["warnings"]
    return warnings


class InspectionQueue:
    def __init__(self, db: Database, store: BlobStore) -> None:
        self.db = db
        self.store = store
        self.wake = asyncio.Event()

    def inspect(
        self, traceset: Traceset, seq: int | None = None
    ) -> tuple[Summary, list[FileFinding], TracesetAnalysis]:
        """Each primary file's findings (head and tail), then its figures (one full pass);
        the claim on inspection ``seq`` is renewed between files."""
        findings: list[FileFinding] = []
        traces: list[TraceAnalysis] = []
        renewed = time.monotonic()
        for f in traceset.files:
            if f.role == "primary":
                assert f.sha256 is not None  # complete recorded every file's digest
                source = self.store.open_source(
                    f"{traceset.id}/{f.idx}", sha256=f.sha256, size=f.size
                )
                findings.extend(inspect_file(f.name, source))
                traces.extend(analyze_file(f.name, source))
                # Renewed well within STALE_AFTER, not after every file: a write a file
                # would cost a traceset of 100,000 tiny traces more than reading them.
                if seq is not None and time.monotonic() - renewed > RENEW_EVERY:
                    with self.db.write() as conn:
                        queries.renew_inspection_claim(conn, seq=seq, now=datetime.now(UTC))
                    renewed = time.monotonic()
        summary = summarize(findings, declared_rank_count=traceset.rank_count)
        metadata = orjson.loads(traceset.workload_metadata) if traceset.workload_metadata else None
        analysis = analyse_traceset(
            findings,
            traces,
            parallelism=declared_parallelism(metadata),
            world_size=summary.world_size or traceset.rank_count,
        )
        summary = replace(summary, warnings=[*summary.warnings, *analysis.checks.warnings])
        return summary, findings, analysis

    def run_one(self) -> bool:
        """Claim and run one queued inspection; False when there was nothing to do."""
        now = datetime.now(UTC)
        with self.db.write() as conn:
            claimed = queries.claim_inspection(conn, now=now, stale_before=now - STALE_AFTER)
        if claimed is None:
            return False
        seq, attempts = claimed
        with self.db.read() as conn:
            traceset = queries.traceset_by_seq(conn, seq)
        if traceset is None:
            return True  # deleted meanwhile; its inspection row went with it
        try:
            summary, findings, analysis = self.inspect(traceset, seq)
        except Exception as exc:  # the store failed, not the traces: those become findings
            log.exception("inspecting traceset %s failed (attempt %d)", traceset.id, attempts)
            with self.db.write() as conn:
                if attempts >= MAX_ATTEMPTS:
                    queries.finish_inspection(
                        conn,
                        seq=seq,
                        status="failed",
                        ok=False,
                        result=failure_json(str(exc)),
                        now=now,
                    )
                else:
                    queries.release_inspection(conn, seq=seq)
            return True
        with self.db.write() as conn:
            queries.finish_inspection(
                conn,
                seq=seq,
                status="done",
                ok=not summary.warnings,
                result=result_json(summary, findings, analysis.inline()),
                now=datetime.now(UTC),
                consistent=not analysis.checks.warnings,
                ranks=[orjson.dumps(figures) for figures in analysis.ranks],
            )
        return True

    async def run_forever(self) -> None:
        while True:
            try:
                busy = await asyncio.to_thread(self.run_one)
            except Exception:  # the database is unreachable: try again after a pause
                log.exception("the inspection queue could not claim work")
                busy = False
            if not busy:
                self.wake.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.wake.wait(), IDLE_SECONDS)
