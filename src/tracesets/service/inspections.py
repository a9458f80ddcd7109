"""Inspecting completed tracesets in the background, file by file, in whichever process is free.

``complete`` queues an inspection in the same transaction that makes the traceset
ready. Any process running an ``InspectionQueue`` (a service process, or ``tracesets
worker`` on any machine that shares the database and the store) takes it up: the
inspection gets a row per primary file, and each file is claimed on its own (a few small
ones in one transaction), so every process works on one traceset's files at once. A
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

Reading a trace is Python bound to one core, so a queue shares the small files of a
batch among a pool of processes, one per core (``processes``), while it fetches them;
the claims, the leases and the records stay in the queue's own process; a few small files
go to the pool as one task. The next batch is claimed while the pool reads the last
files of the one before, so the pool does not wait for a batch's record and the next
claim. The pool lives while there is work, and goes when the queue is idle. A pool process that dies fails the files of the tasks it had not answered yet:
they are given back as a failed attempt and claimed again, by a new pool; whatever was
answered is recorded, nothing else.
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
from concurrent.futures import (
    FIRST_COMPLETED,
    CancelledError,
    Future,
    ProcessPoolExecutor,
    ThreadPoolExecutor,
    wait,
)
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Final

from sqlalchemy import Connection

from tracesets.db import inspection_files as claims
from tracesets.db import queries
from tracesets.db.engine import Database
from tracesets.db.inspection_files import Claim
from tracesets.inspection import ByteSource
from tracesets.inspection.cores import cores
from tracesets.inspection.source import READ_ONCE_LIMIT, FileSource, fetch, read_once
from tracesets.service.fetching import FETCH_AHEAD, Stoppable, fetch_ahead, make_room
from tracesets.service.joined import failure_json, join_results
from tracesets.service.reading import failed, read_stored, reading_pool, send_to_pool
from tracesets.storage.base import BlobStore, blob_key

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
#: Small files sent to the pool in one task, at most, and their bytes: a task's passage
#: between processes (the executor's threads, its pipes) cost the queue's process about
#: 0.5 ms of CPU, a quarter of what a rank's trace costs to read, so a few go together.
POOL_TASK_FILES: Final = 4
POOL_TASK_BYTES: Final = 1024 * 1024
#: The next batch is claimed when each pool process has at most this many of the batch's
#: tasks left: enough to keep it busy through the claim, few enough to leave other
#: processes their share of a traceset's files.
TAIL_TASKS: Final = 2


@dataclass(slots=True)
class _Reading:
    """A claimed batch on its way: the files sent to the pool, their answers to come,
    and what the files read in this process said."""

    batch: list[Claim]
    readers: ProcessPoolExecutor | None
    sent: list[tuple[Claim, Future[str]]] = field(default_factory=list)
    outcomes: list[tuple[Claim, str, str]] = field(default_factory=list)


def process_name() -> str:
    """Who holds a claim: the machine, the process, and a nonce against reused pids."""
    return f"{socket.gethostname()[:96]}:{os.getpid()}:{secrets.token_hex(3)}"


def _utcnow() -> datetime:
    return datetime.now(UTC)


class InspectionQueue:
    """Claims files of queued inspections and records what they say.

    ``before_file`` is called with each claimed file's name before it is read, and
    ``before_file_in_pool`` (picklable) in the pool process that reads it: tests use them
    to hold a process inside a known file. ``processes``: the pool's size (default one
    per core; 1 reads every file in this process).
    """

    def __init__(
        self,
        db: Database,
        store: BlobStore,
        *,
        lease: timedelta = DEFAULT_LEASE,
        owner: str | None = None,
        before_file: Callable[[str], None] | None = None,
        processes: int | None = None,
    ) -> None:
        self.db = db
        self.store = store
        self.lease = lease
        self.owner = owner or process_name()
        self.before_file = before_file
        self.before_file_in_pool: Callable[[str], None] | None = None
        self.processes = cores() if processes is None else processes
        self.wake = asyncio.Event()
        self.stopping = threading.Event()
        self._held: list[Claim] = []
        self._heartbeat: threading.Thread | None = None
        self._readers: ProcessPoolExecutor | None = None

    def stop(self) -> None:
        """Stop taking work; the file being read is given back at its next read."""
        self.stopping.set()

    def run_one(self) -> bool:
        """Claim files and inspect them, batch after batch while there are any; False when
        there was nothing to do."""
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
        return self.db.write_soon(lambda conn: self._claim_or_take_up(conn, _utcnow()))

    def _claim_or_take_up(self, conn: Connection, now: datetime) -> list[Claim] | None:
        """Files to inspect, from a pending inspection taken up if none is running; None
        when nothing is queued."""
        batch = self._claim(conn, now)
        if not batch:
            seq = claims.take_up_inspection(conn, now=now)
            if seq is None:
                return None
            batch = self._claim(conn, now)
            if not batch and self._join(conn, seq):  # no primary file at all
                log.info("inspection %d: checks across ranks run by %s", seq, self.owner)
        return batch

    def _claim(self, conn: Connection, now: datetime) -> list[Claim]:
        return claims.claim_files(
            conn,
            owner=self.owner,
            now=now,
            lease_until=now + self.lease,
            max_files=MAX_BATCH_FILES,
            max_bytes=MAX_BATCH_BYTES,
        )

    def _inspect(self, batch: list[Claim]) -> None:
        """Inspect the claimed files, small ones in the pool, and record each batch's
        together, claiming the next batch while the pool reads the last files of the one
        before; when told to stop, record what is done and give the rest back."""
        try:
            reading: _Reading | None = self._start(batch, behind=[])
            while reading is not None:
                following = self._next(reading) if reading.sent else None
                self._finish(reading)
                reading = following if reading.sent else self._next(None)
        finally:
            self._held = []

    def _next(self, behind: _Reading | None) -> _Reading | None:
        """The next batch claimed and on its way, once the pool is down to the last few
        tasks of the one ``behind``: a batch waited for its last task, its record and the
        next claim with the pool idle, a sixth of the time of a job of small rank files.
        Not sooner, so that other processes share a traceset's files."""
        if behind is not None:
            tail = TAIL_TASKS * POOL_TASK_FILES * self.processes
            while not self.stopping.is_set():
                unread = [answer for _, answer in behind.sent if not answer.done()]
                if len(unread) <= tail:
                    break
                wait(unread, return_when=FIRST_COMPLETED)
        if self.stopping.is_set():
            return None
        batch = self._claim_more()
        if not batch:
            return None
        return self._start(batch, behind=[] if behind is None else behind.sent)

    def _finish(self, reading: _Reading) -> None:
        outcomes = self._collect(reading)
        if outcomes:
            self._record(outcomes)
        if self.stopping.is_set():
            self._give_back([c for c in reading.batch if c not in {o[0] for o in outcomes}])
        done = set(reading.batch)
        self._held = [claim for claim in self._held if claim not in done]

    def _start(self, batch: list[Claim], behind: list[tuple[Claim, Future[str]]]) -> _Reading:
        """The batch's small files sent to the pool as they arrive (within the byte budget,
        with those still unread of the batch ``behind``); larger ones read here, meanwhile.

        Small files are read whole, in one request (``read_once``): inspection and analysis
        read a file two or three times (head, tail, events).
        """
        self._held = [*self._held, *batch]
        reading = _Reading(batch, self._pool_for(batch))
        readers, sent = reading.readers, reading.sent
        task: list[tuple[Claim, bytes | str]] = []  # small files fetched, not yet sent
        fetching = (
            ThreadPoolExecutor(FETCH_AHEAD, thread_name_prefix="inspection-fetch")
            if self.store.remote
            else None
        )
        try:
            for claim, source in fetch_ahead(batch, self._fetcher(fetching)):
                if self.stopping.is_set():
                    break
                if readers is not None and claim.size <= READ_ONCE_LIMIT:
                    held = sum(c.size for c, _ in task)
                    make_room(behind + sent, held + claim.size)
                    try:
                        task.append((claim, self._payload(claim, source)))
                    except Exception as exc:
                        sent.append((claim, failed(exc)))
                    if len(task) >= POOL_TASK_FILES or held + claim.size >= POOL_TASK_BYTES:
                        sent += self._send(readers, task)
                        task = []
                else:
                    outcome = self._attempt(claim, self._read_here, claim, source)
                    if outcome is not None:
                        reading.outcomes.append((claim, *outcome))
                del source  # its bytes go now, not when the next file's arrive
            else:
                if task and readers is not None:
                    sent += self._send(readers, task)
        finally:
            if fetching is not None:
                fetching.shutdown(wait=True, cancel_futures=True)
        return reading

    def _collect(self, reading: _Reading) -> list[tuple[Claim, str, str]]:
        """What each file of the batch says, or why it failed; files given back left out."""
        outcomes = reading.outcomes
        for claim, answer in reading.sent:
            outcome = self._attempt(claim, answer.result)
            if outcome is not None:
                outcomes.append((claim, *outcome))
            if (
                not answer.cancelled()
                and isinstance(answer.exception(), BrokenProcessPool)
                and reading.readers is self._readers
            ):
                self._close_pool()  # a pool process died: the next batch gets a new pool
        return outcomes

    def _fetcher(
        self, fetching: ThreadPoolExecutor | None
    ) -> Callable[[Claim], Future[ByteSource]]:
        """How the batch's files are fetched: a remote store's on threads, ahead of their
        reading, since each is a round trip; a local file opened when its turn comes, since
        that is a system call (on a thread and back, 4,096 rank files cost this process 0.3 s
        of CPU, taken from the pool's processes on the same cores)."""
        if fetching is not None:
            return lambda claim: fetching.submit(self._open, claim)

        def opened(claim: Claim) -> Future[ByteSource]:
            future: Future[ByteSource] = Future()
            try:
                future.set_result(self._open(claim))
            except Exception as exc:  # the store's failure, met when the file is read
                future.set_exception(exc)
            return future

        return opened

    def _pool_for(self, batch: list[Claim]) -> ProcessPoolExecutor | None:
        """The pool, started if need be; None for one process or one small file."""
        small = sum(claim.size <= READ_ONCE_LIMIT for claim in batch)
        if self.processes <= 1 or small < 2:
            return self._readers
        if self._readers is None:
            self._readers = reading_pool(self.processes)
        return self._readers

    def _close_pool(self) -> None:
        readers, self._readers = self._readers, None
        if readers is not None:
            readers.shutdown(wait=False, cancel_futures=True)

    def _open(self, claim: Claim) -> ByteSource:
        assert claim.sha256 is not None  # complete recorded every file's digest
        source = self.store.open_source(
            blob_key(claim.traceset_id, claim.idx), sha256=claim.sha256, size=claim.size
        )
        if isinstance(source, FileSource):
            # A local file's read is a system call, no round trip to save. Read whole on
            # the fetch threads, files of a few MiB stayed in glibc's per-thread arenas
            # after they were freed: 64 files of 2 MiB took a service from 85 to 123 MB.
            return source
        return read_once(Stoppable(source, self.stopping))

    def _payload(self, claim: Claim, fetched: Future[ByteSource]) -> bytes | str:
        """What the pool gets of a small file: a local file's path (the pool process
        reads it; read here, one after the other, the files were half of this process's
        time and kept the pool waiting), else the bytes fetched."""
        if self.before_file is not None:
            self.before_file(claim.name)
        source = fetched.result()
        if isinstance(source, FileSource):
            return str(source.path)
        source = Stoppable(source, self.stopping)
        return fetch(source, 0, source.size)

    def _send(
        self, readers: ProcessPoolExecutor, task: list[tuple[Claim, bytes | str]]
    ) -> list[tuple[Claim, Future[str]]]:
        """A few small files sent to the pool as one task: each file's answer, or the
        failure to send them, as its own future."""
        files = [(claim.name, data) for claim, data in task]
        answers = send_to_pool(readers, files, self.before_file_in_pool)
        return [(claim, answer) for (claim, _), answer in zip(task, answers, strict=True)]

    def _read_here(self, claim: Claim, fetched: Future[ByteSource]) -> str:
        if self.before_file is not None:
            self.before_file(claim.name)
        # Fetched ahead, perhaps whole: a stop still gives the file back at its next read.
        return read_stored(claim.name, Stoppable(fetched.result(), self.stopping))

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
            log.exception("inspecting file %s failed (attempt %d)", claim.name, claim.attempts)
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
            log.info("file %s given back: %s is stopping", claim.name, self.owner)

    def _record(self, outcomes: list[tuple[Claim, str, str]]) -> None:
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
            log.info(
                "file %s of traceset %s %s by %s (attempt %d)",
                claim.name,
                claim.traceset_id,
                ("inspected" if status == "done" else "failed")
                if claim in counted
                else "inspected, but another process recorded it first,",
                self.owner,
                claim.attempts,
            )
        for seq in joined:
            log.info("inspection %d: checks across ranks run by %s", seq, self.owner)

    def _join(self, conn: Connection, seq: int) -> bool:
        try:
            joined = join_results(conn, seq)
        except Exception as exc:  # a bug of the analysis must not leave it pending forever
            log.exception("joining the files of inspection %d failed", seq)
            joined = ("failed", failure_json(str(exc)), False, None, [])
        if joined is None:
            return False
        status, result, ok, consistent, ranks = joined
        queries.finish_inspection(
            conn,
            seq=seq,
            status=status,
            ok=ok,
            result=result,
            now=_utcnow(),
            consistent=consistent,
            ranks=ranks,
        )
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
                    self._close_pool()
                    self.stopping.wait(IDLE_SECONDS)
        finally:
            self._close_pool()

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
                    self._close_pool()
                    self.wake.clear()
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self.wake.wait(), IDLE_SECONDS)
        finally:
            self._close_pool()
