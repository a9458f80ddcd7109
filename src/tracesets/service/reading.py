"""Reading one stored file's traces, in the queue's process or in its pool of processes.

A pool process runs only this module's functions, so it starts with this module and what
it imports (the trace readers: no database, no store): the fork server that makes pool
processes imports it once (``POOL_PRELOAD``), then each pool process is a fork of it.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from functools import partial
from typing import Final

from tracesets.analysis import analyze_file
from tracesets.analysis import stored as stored_analysis
from tracesets.analysis.collector import fewer_collections
from tracesets.inspection import ByteSource, inspect_file
from tracesets.inspection.budget import file_budget
from tracesets.inspection.source import BytesSource, FileSource, read_once

#: Modules a pool process starts with (forked from a server that imported them once).
POOL_PRELOAD: Final = ["tracesets.service.reading"]


def read_stored(name: str, source: ByteSource) -> str:
    """One file's findings and figures, as its row keeps them."""
    # the figures first: the findings reuse their inflated bytes; both in one CPU budget
    with fewer_collections(), file_budget():
        traces = analyze_file(name, source)
        findings = inspect_file(name, source)
    return stored_analysis.dumps(findings, traces)


#: A small file sent to the pool: its name, and its bytes or, in a local store, its path
#: (the pool process reads it: the queue's process neither reads nor passes its bytes).
PoolFile = tuple[str, bytes | str]


def read_in_pool(
    files: list[PoolFile], before: Callable[[str], None] | None
) -> list[str | Exception]:
    """(In a pool process) ``read_stored`` of a few small files, each file's text or what
    it raised (a file that cannot be read too: the store failed, as when the queue's
    process reads it): one task for a few files, since a task's passage between processes
    costs the queue's process about a quarter of what reading a rank's trace costs."""
    answers: list[str | Exception] = []
    for name, data in files:
        try:
            if before is not None:
                before(name)
            source = BytesSource(data) if isinstance(data, bytes) else read_once(FileSource(data))
            answers.append(read_stored(name, source))
        except Exception as exc:  # this file's failure, not its neighbours'
            answers.append(exc)
    return answers


def failed(exc: BaseException) -> Future[str]:
    failed: Future[str] = Future()
    failed.set_exception(exc)
    return failed


def _answer_each(answers: list[Future[str]], task: Future[list[str | Exception]]) -> None:
    """A pool task's outcome handed to each of its files' futures: its own text or
    exception, or the task's cancellation or failure (its process died) to all."""
    if task.cancelled():
        for answer in answers:
            answer.cancel()
        return
    failure = task.exception()
    if failure is not None:
        for answer in answers:
            answer.set_exception(failure)
        return
    for answer, result in zip(answers, task.result(), strict=True):
        if isinstance(result, Exception):
            answer.set_exception(result)
        else:
            answer.set_result(result)


def send_to_pool(
    readers: ProcessPoolExecutor,
    files: list[PoolFile],
    before: Callable[[str], None] | None,
) -> list[Future[str]]:
    """A few small files sent to the pool as one task (``read_in_pool``): each file's
    answer, or the failure to send them, as its own future."""
    try:
        task = readers.submit(read_in_pool, files, before)
    except Exception as exc:
        return [failed(exc) for _ in files]
    answers: list[Future[str]] = [Future() for _ in files]
    task.add_done_callback(partial(_answer_each, answers))
    return answers


def _end_with_the_queue() -> None:
    """(In a pool process) exit when the queue's process is gone, however it ended: a
    pool process waits on a queue it holds both ends of, so it would wait forever."""
    queue_process = multiprocessing.parent_process()
    if queue_process is None:
        return

    def watch() -> None:
        queue_process.join()
        os._exit(1)

    threading.Thread(target=watch, name="inspection-pool-watch", daemon=True).start()


def reading_pool(processes: int) -> ProcessPoolExecutor:
    """Processes forked from a server started once, without this process's threads."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(POOL_PRELOAD)
    return ProcessPoolExecutor(processes, mp_context=context, initializer=_end_with_the_queue)
