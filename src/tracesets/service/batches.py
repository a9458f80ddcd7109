"""A claimed batch of files read: small ones by a pool of processes, larger ones here.

Reading a trace is Python bound to one core, so the inspection queue shares the small
files of a batch among a pool of processes, one per core, while it fetches them; a few
small files go to the pool as one task. The claims, the leases and the records stay with
the queue (``service.inspections``); this module reads. The pool lives while there is
work, and the queue closes it when idle. A pool process that dies fails the files of the
tasks it had not answered yet, and the next batch gets a new pool.

A batch is read in two steps, ``start`` (fetch, send to the pool, read the larger files
here) and ``collect`` (each file's answer), so that the queue can claim and start the
next batch while the pool reads the last files of this one.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import (
    FIRST_COMPLETED,
    Future,
    ProcessPoolExecutor,
    ThreadPoolExecutor,
    wait,
)
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from typing import Final

from tracesets.db.inspection_files import Claim
from tracesets.inspection import ByteSource
from tracesets.inspection.cores import cores
from tracesets.inspection.source import READ_ONCE_LIMIT, FileSource, fetch, read_once
from tracesets.service.fetching import (
    FETCH_AHEAD,
    FETCH_AHEAD_BYTES,
    Stoppable,
    fetch_ahead,
    make_room,
)
from tracesets.service.reading import failed, read_stored, reading_pool, send_to_pool
from tracesets.storage.base import BlobStore, blob_key

#: Small files sent to the pool in one task, at most, and their bytes: a task's passage
#: between processes (the executor's threads, its pipes, a future each) costs both sides
#: CPU. A job of 4,095 rank files took 4.1 s with 4 files a task, 3.8 s with 16, once
#: the next batch was claimed while the pool reads: the pool no longer waits at a
#: batch's end, where smaller tasks used to end sooner. (A pool process that dies fails
#: every unanswered task of the pool, whatever their size.)
POOL_TASK_FILES: Final = 16
POOL_TASK_BYTES: Final = 1024 * 1024
#: The next batch is claimed when each pool process has at most this many of the batch's
#: tasks left: enough to keep it busy through the claim, few enough to leave other
#: processes their share of a traceset's files.
TAIL_TASKS: Final = 1

#: What the queue records of a file: ("done", its findings and figures) or ("failed", why).
Outcome = tuple[Claim, str, str]
#: How the queue tries a read: its outcome's status and text, or None when the file goes
#: back to the queue (``InspectionQueue._attempt``).
Attempt = Callable[..., tuple[str, str] | None]


@dataclass(slots=True)
class Reading:
    """A batch on its way: the files sent to the pool, their answers to come, and what
    the files read in this process said."""

    batch: list[Claim]
    readers: ProcessPoolExecutor | None
    sent: list[tuple[Claim, Future[str]]] = field(default_factory=list)
    outcomes: list[Outcome] = field(default_factory=list)


class BatchReader:
    """Reads batches of claimed files through ``store``, each file tried by ``attempt``.

    ``before_file`` is called with each file's name before it is read, and
    ``before_file_in_pool`` (picklable) in the pool process that reads it: tests use them
    to hold a process inside a known file. ``processes``: the pool's size (default one
    per core; 1 reads every file in this process).
    """

    def __init__(
        self,
        store: BlobStore,
        stopping: threading.Event,
        attempt: Attempt,
        *,
        processes: int | None = None,
    ) -> None:
        self.store = store
        self.stopping = stopping
        self.attempt = attempt
        self.processes = cores() if processes is None else processes
        self.before_file: Callable[[str], None] | None = None
        self.before_file_in_pool: Callable[[str], None] | None = None
        self._readers: ProcessPoolExecutor | None = None

    def start(self, batch: list[Claim], behind: Reading | None = None) -> Reading:
        """The batch's small files sent to the pool as they arrive (within the byte budget,
        with those still unread of the batch ``behind``); larger ones read here, meanwhile.

        Small files are read whole, in one request (``read_once``): inspection and analysis
        read a file two or three times (head, tail, events).
        """
        reading = Reading(batch, self._pool_for(batch))
        readers, sent = reading.readers, reading.sent
        ahead = [] if behind is None else behind.sent
        # Bytes sent to the pool, read or not: while they fit the budget there is no
        # answer to wait for (summed again for each file, 4,096 files cost this process
        # a tenth of a second).
        sent_bytes = sum(claim.size for claim, _ in ahead)
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
                    if sent_bytes + held + claim.size > FETCH_AHEAD_BYTES:
                        make_room(ahead + sent, held + claim.size)
                    try:
                        task.append((claim, self._payload(claim, source)))
                    except Exception as exc:
                        sent.append((claim, failed(exc)))
                    if len(task) >= POOL_TASK_FILES or held + claim.size >= POOL_TASK_BYTES:
                        sent += self._send(readers, task)
                        sent_bytes += sum(c.size for c, _ in task)
                        task = []
                else:
                    outcome = self.attempt(claim, self._read_here, claim, source)
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

    def until_tail(self, reading: Reading) -> None:
        """Wait until each pool process has at most TAIL_TASKS of the batch's tasks left
        (or this process is told to stop)."""
        tail = TAIL_TASKS * POOL_TASK_FILES * self.processes
        while not self.stopping.is_set():
            unread = [answer for _, answer in reading.sent if not answer.done()]
            if len(unread) <= tail:
                return
            wait(unread, return_when=FIRST_COMPLETED)

    def collect(self, reading: Reading) -> list[Outcome]:
        """What each file of the batch says, or why it failed; files given back left out."""
        outcomes = reading.outcomes
        for claim, answer in reading.sent:
            outcome = self.attempt(claim, answer.result)
            if outcome is not None:
                outcomes.append((claim, *outcome))
            if (
                not answer.cancelled()
                and isinstance(answer.exception(), BrokenProcessPool)
                and reading.readers is self._readers
            ):
                self.close_pool()  # a pool process died: the next batch gets a new pool
        return outcomes

    def close_pool(self) -> None:
        readers, self._readers = self._readers, None
        if readers is not None:
            readers.shutdown(wait=False, cancel_futures=True)

    def open(self, claim: Claim) -> ByteSource:
        """The claimed file, as the pool or this process reads it."""
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

    def _fetcher(
        self, fetching: ThreadPoolExecutor | None
    ) -> Callable[[Claim], Future[ByteSource]]:
        """How the batch's files are fetched: a remote store's on threads, ahead of their
        reading, since each is a round trip; a local file opened when its turn comes, since
        that is a system call (on a thread and back, 4,096 rank files cost this process 0.3 s
        of CPU, taken from the pool's processes on the same cores)."""
        if fetching is not None:
            return lambda claim: fetching.submit(self.open, claim)

        def opened(claim: Claim) -> Future[ByteSource]:
            future: Future[ByteSource] = Future()
            try:
                future.set_result(self.open(claim))
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

    def _payload(self, claim: Claim, fetched: Future[ByteSource]) -> bytes | str:
        """What the pool gets of a small file: a local file's path (the pool process
        reads it; read here, one after the other, the files were half of this process's
        time and kept the pool waiting), else the bytes fetched."""
        if self.before_file is not None:
            self.before_file(claim.name)
        source = fetched.result()
        if isinstance(source, FileSource):
            return source.path
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
