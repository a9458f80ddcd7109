"""Inspecting completed tracesets in the background, file by file, in whichever process is free.

``complete`` queues an inspection in the same transaction that makes the traceset
ready. Any process running an ``InspectionQueue`` (a service process, or ``tracesets
worker`` on any machine that shares the database and the store) takes it up: the
inspection gets a row per primary file, and each file is claimed on its own (a few small
ones in one transaction), so every process works on one traceset's files at once.
Workspaces take turns (``db.inspection_turns``): each claim goes to the one served least
recently among those with files waiting, so one workspace's flood delays no other's. A
file is read through the store (ranged reads; streamed, never held): each trace's claim
from its head or tail, then its per-rank figures from one pass over its events
(``tracesets.analysis``), kept in the file's row. Whoever records the last file joins
them and runs the checks across ranks, in the same transaction, so they run exactly
once.

A claim is a lease, pushed forward by a heartbeat while the file is read. A process
that dies mid-file leaves a lease that runs out, and another process takes the file
over; a process told to stop gives its files back at once. A file that fails three
times (the store failed, not the traces: bad bytes are findings) is recorded as
failed, and the inspection fails with the reason once its other files are done.

The files are read by a ``BatchReader`` (``service.batches``): small ones by a pool of
processes, one per core. The queue claims its next batch while the pool reads the last
files of the one before, so the pool does not wait for a batch's record and the next
claim; the claims, the leases and the records stay in the queue's own process.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import socket
import threading
from collections.abc import Callable
from concurrent.futures import CancelledError
from datetime import UTC, datetime, timedelta
from typing import Final

from sqlalchemy import Connection

from tracesets import metrics
from tracesets.db import comparing, queries
from tracesets.db import inspection_files as claims
from tracesets.db.engine import Database
from tracesets.db.inspection_files import Claim
from tracesets.service import regression
from tracesets.service.batches import BatchReader, Outcome, Reading
from tracesets.service.joined import failed, join_results
from tracesets.service.regression import Thresholds
from tracesets.storage.base import BlobStore

log = logging.getLogger("tracesets.inspection")

DEFAULT_LEASE: Final = timedelta(seconds=60)
MAX_ATTEMPTS: Final = 3
#: A process claims up to this many files at once, while they add up to at most
#: MAX_BATCH_BYTES (a larger file is claimed alone): a small file's claim and record,
#: two transactions, otherwise cost more than reading it. A job of 1,024 rank files
#: took 2.6-3.3 s in batches of 16, 2.1-2.3 s in batches of 64.
MAX_BATCH_FILES: Final = 64
MAX_BATCH_BYTES: Final = 64 * 1024 * 1024
IDLE_SECONDS: Final = 2.0


def process_name() -> str:
    """Who holds a claim: the machine, the process, and a nonce against reused pids."""
    return f"{socket.gethostname()[:96]}:{os.getpid()}:{secrets.token_hex(3)}"


def _utcnow() -> datetime:
    return datetime.now(UTC)


class InspectionQueue:
    """Claims files of queued inspections and records what they say; ``reader`` reads
    them (``processes``: its pool's size, one per core by default)."""

    def __init__(
        self,
        db: Database,
        store: BlobStore,
        *,
        lease: timedelta = DEFAULT_LEASE,
        owner: str | None = None,
        processes: int | None = None,
        thresholds: Thresholds | None = None,
    ) -> None:
        self.db = db
        self.thresholds = thresholds or Thresholds()
        self.lease = lease
        self.owner = owner or process_name()
        self.wake = asyncio.Event()
        self.stopping = threading.Event()
        self.reader = BatchReader(store, self.stopping, self._attempt, processes=processes)
        self._held: list[Claim] = []
        self._heartbeat: threading.Thread | None = None

    def stop(self) -> None:
        """Stop taking work; the file being read is given back at its next read."""
        self.stopping.set()

    def run_one(self) -> bool:
        """Claim a few files and inspect them, and the next few while the pool reads the
        last of those; False when there was nothing to do."""
        metrics.HEARTBEAT.set_to_current_time()
        self._start_heartbeat()
        batch = self._claim_more()
        if batch is None:
            return False
        if batch:
            self._inspect(batch)
        return True

    def _claim_more(self) -> list[Claim] | None:
        # Committed with the requests' writes (one fsync on SQLite, not one more each):
        # a claim and a record per traceset, each holding SQLite's only writer through
        # its own fsync, made every upload and promote of a busy service wait on them.
        seen: list[claims.Claimed] = []  # the last claim, the one committed
        batch = self.db.write_soon(lambda conn: self._claim_or_take_up(conn, _utcnow(), seen))
        if batch:
            metrics.TAKEOVERS.inc(seen[-1].taken_over)
            log.info(
                "%d files claimed by %s",
                len(batch),
                self.owner,
                extra={
                    "event": "inspection.claimed",
                    "files": len(batch),
                    "taken_over": seen[-1].taken_over,
                    "owner": self.owner,
                },
            )
        return batch

    def _claim_or_take_up(
        self, conn: Connection, now: datetime, seen: list[claims.Claimed]
    ) -> list[Claim] | None:
        """Files to inspect, of the workspace whose turn it is (an inspection of it taken
        up if none is running); None when nothing is queued."""
        claimed = claims.claim_files(
            conn,
            owner=self.owner,
            now=now,
            lease_until=now + self.lease,
            max_files=MAX_BATCH_FILES,
            max_bytes=MAX_BATCH_BYTES,
        )
        seen.append(claimed)
        if claimed.empty is None:
            return claimed.files or None
        if self._join(conn, claimed.empty):  # no primary file at all
            log.info(
                "inspection %d: checks across ranks run by %s",
                claimed.empty,
                self.owner,
                extra={"event": "inspection.done", "owner": self.owner},
            )
        return claimed.files

    def _inspect(self, batch: list[Claim]) -> None:
        """Inspect the claimed files, small ones in the pool, and record each batch's
        together, claiming the next batch while the pool reads the last files of the one
        before; when told to stop, record what is done and give the rest back.

        A batch read in this process alone (one small file, or large ones) is recorded
        before anything else is claimed, as the caller claims again: claiming here too
        cost a service under load an empty claim for every traceset of one file.
        """
        try:
            self._held = list(batch)
            reading: Reading | None = self.reader.start(batch)
            while reading is not None:
                following = self._next(reading) if reading.sent else None
                self._finish(reading)
                reading = following
        finally:
            self._held = []

    def _next(self, behind: Reading) -> Reading | None:
        """The next batch claimed and on its way, once the pool is down to the last few
        tasks of the one ``behind``. Claimed after the batch's record, the pool stood idle
        through the last task, the record and the claim: a job of 4,095 rank files took
        9.7 s (8.3-10.4) to inspect with SQLite, 8.5 s (7.0-9.3) now. Not sooner, so that
        other processes get their share of a traceset's files."""
        self.reader.until_tail(behind)
        if self.stopping.is_set():
            return None
        batch = self._claim_more()
        if not batch:
            return None
        self._held = [*self._held, *batch]
        return self.reader.start(batch, behind)

    def _finish(self, reading: Reading) -> None:
        outcomes = self.reader.collect(reading)
        if outcomes:
            self._record(outcomes)
        if self.stopping.is_set():
            read = {claim for claim, _, _ in outcomes}
            self._give_back([claim for claim in reading.batch if claim not in read])
        done = set(reading.batch)
        self._held = [claim for claim in self._held if claim not in done]

    def _attempt(
        self, claim: Claim, read: Callable[..., str], *args: object
    ) -> tuple[str, str] | None:
        """("done", its findings and figures) or ("failed", why) to record; None when the
        file goes back to the queue."""
        try:
            return "done", read(*args)
        except (Exception, CancelledError) as exc:  # the store failed, or the pool went
            # (not the traces: those become findings)
            if self.stopping.is_set():
                return None  # given back with the rest of the batch
            log.exception(
                "inspecting file %s failed (attempt %d)",
                claim.name,
                claim.attempts,
                extra={"event": "inspection.attempt_failed", "traceset_id": claim.traceset_id},
            )
            if claim.attempts >= MAX_ATTEMPTS:
                return "failed", str(exc)
            with self.db.write() as conn:
                claims.release(conn, claim=claim, owner=self.owner, count_attempt=True)
            return None

    def _give_back(self, left: list[Claim]) -> None:
        """Files not inspected because this process is stopping: not a failed attempt."""
        with self.db.write() as conn:
            for claim in left:
                claims.release(conn, claim=claim, owner=self.owner, count_attempt=False)
        for claim in left:
            log.info(
                "file %s given back: %s is stopping",
                claim.name,
                self.owner,
                extra={"event": "inspection.given_back", "traceset_id": claim.traceset_id},
            )

    def _record(self, outcomes: list[Outcome]) -> None:
        """Record files; for each traceset whose last file this was, join its files and
        run the checks, in the same transaction: of two processes recording the last two
        files, the inspection's row lock lets exactly one see that nothing is left.
        Inspections are locked in seq order, so two recorders never wait on each other."""
        counted: set[Claim] = set()
        joined: list[int] = []

        def record(conn: Connection) -> None:
            for seq in sorted({claim.seq for claim, _, _ in outcomes}):
                if claims.lock_inspection(conn, seq) != "running":
                    continue  # deleted, or finished already
                recorded = False
                for claim, status, result in outcomes:
                    if claim.seq == seq and claims.record_file(
                        conn,
                        claim=claim,
                        owner=self.owner,
                        status=status,
                        result=result,
                        now=_utcnow(),
                    ):
                        counted.add(claim)
                        recorded = True
                if recorded and claims.unfinished(conn, seq) == 0 and self._join(conn, seq):
                    joined.append(seq)

        self.db.write_soon(record)  # committed with others' writes, as the claim is
        for claim, status, _ in outcomes:
            if claim in counted:
                metrics.FILES_INSPECTED.labels(status).inc()
            log.info(
                "file %s of traceset %s %s by %s (attempt %d)",
                claim.name,
                claim.traceset_id,
                ("inspected" if status == "done" else "failed")
                if claim in counted
                else "inspected, but another process recorded it first,",
                self.owner,
                claim.attempts,
                extra={
                    "event": f"inspection.file_{status}" if claim in counted else "inspection.late",
                    "traceset_id": claim.traceset_id,
                    "attempt": claim.attempts,
                    "owner": self.owner,
                },
            )
        for seq in joined:
            log.info(
                "inspection %d: checks across ranks run by %s",
                seq,
                self.owner,
                extra={"event": "inspection.done", "owner": self.owner},
            )

    def _join(self, conn: Connection, seq: int) -> bool:
        try:
            joined = join_results(conn, seq)
        except Exception as exc:  # a bug of the analysis must not leave it pending forever
            log.exception("joining the files of inspection %d failed", seq)
            joined = failed(str(exc))
        if joined is None:
            return False
        try:  # its one write is its last step: a failure leaves nothing half-written
            joined = regression.check(conn, seq, joined, self.thresholds)
        except Exception:  # and does not cost the inspection its outcome
            log.exception("comparing inspection %d with its baseline failed", seq)
        queries.finish_inspection(
            conn,
            seq=seq,
            status=joined.status,
            ok=joined.ok,
            result=joined.result,
            now=_utcnow(),
            consistent=joined.consistent,
            ranks=joined.ranks,
            performance=joined.performance,
        )
        comparing.record_operators(conn, seq=seq, rows=joined.operators)
        claims.checked(conn, seq=seq, owner=self.owner)
        return True

    def _start_heartbeat(self) -> None:
        if self._heartbeat is None:
            self._heartbeat = threading.Thread(
                target=self._beat, name="inspection-heartbeat", daemon=True
            )
            self._heartbeat.start()

    def _beat(self) -> None:
        """Push the held files' leases forward, three times a lease, until stopped."""
        while not self.stopping.wait(self.lease.total_seconds() / 3):
            metrics.HEARTBEAT.set_to_current_time()
            held = self._held
            if not held:
                continue
            try:
                with self.db.write() as conn:
                    until = _utcnow() + self.lease
                    claims.renew(conn, held=held, owner=self.owner, lease_until=until)
            except Exception:  # the database is unreachable: the lease may lapse, then retried
                log.exception("renewing the claim on a file failed")

    def run(self) -> None:
        """Work until ``stop``: a process that does nothing else (``tracesets worker``)."""
        try:
            while not self.stopping.is_set():
                try:
                    busy = self.run_one()
                except Exception:  # the database is unreachable: try again after a pause
                    log.exception("the inspection queue could not claim work")
                    busy = False
                if not busy:
                    self.reader.close_pool()
                    self.stopping.wait(IDLE_SECONDS)
        finally:
            self.reader.close_pool()

    async def run_forever(self) -> None:
        """Work beside a service's requests; woken early when a traceset completes."""
        try:
            while not self.stopping.is_set():
                try:
                    busy = await asyncio.to_thread(self.run_one)
                except Exception:  # the database is unreachable: try again after a pause
                    log.exception("the inspection queue could not claim work")
                    busy = False
                if not busy:
                    self.reader.close_pool()
                    self.wake.clear()
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self.wake.wait(), IDLE_SECONDS)
        finally:
            self.reader.close_pool()


def queue_figures(db: Database) -> claims.QueueFigures:
    """The queue's depth, age and claimants, across every process sharing the database."""
    with db.read() as conn:
        return claims.queue_figures(conn, _utcnow())
