"""``tracesets worker``: inspect queued tracesets' files, and nothing else (no HTTP).

Configured as ``serve`` is (``DATABASE_URL``, ``TRACESETS_STORAGE_URL``, the data
folder), it shares the queue with every service process and every other worker on the
same database and store, on any machine: each claims one file at a time, so one
traceset's files are read by all of them at once. Inspection is CPU-bound Python, read
by a pool of processes, one per core: run one worker per machine. SIGTERM or SIGINT
stops it cleanly: the file being read is given back at once (not counted as a failed
attempt) and another process takes it. With ``--metrics-port`` (or
``TRACESETS_WORKER_METRICS_PORT``) it serves its own Prometheus metrics there, the
service's names for what it counts (``tracesets.metrics.serve_worker``); no port is
opened otherwise.

For tests only: with ``TRACESETS_TEST_HOLD_FILE`` and ``TRACESETS_TEST_HOLD_MARK`` set,
a worker that claims the file so named writes its pid to the mark file and waits there
until it is stopped or killed, so that a test knows which file a killed worker held.
With ``TRACESETS_TEST_POOL_HOLD_FILE`` and ``TRACESETS_TEST_POOL_HOLD_MARK``, the first
pool process to read the file so named does the same, so that a test can kill it.
"""

from __future__ import annotations

import functools
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable, Mapping
from datetime import timedelta
from pathlib import Path
from types import FrameType
from typing import Annotated

import typer

from tracesets.cli.output import fail_usage
from tracesets.cli.server import DataDir, _database, _settings

log = logging.getLogger("tracesets.worker")


def _hold(env: Mapping[str, str], stopping: threading.Event) -> Callable[[str], None] | None:
    name, mark = env.get("TRACESETS_TEST_HOLD_FILE"), env.get("TRACESETS_TEST_HOLD_MARK")
    if not name or not mark:
        return None

    def hold(file_name: str) -> None:
        if file_name == name:
            Path(mark).write_text(str(os.getpid()))
            stopping.wait()

    return hold


def hold_in_pool(file_name: str, *, name: str, mark: str) -> None:
    """(In a pool process) the first to read ``name`` writes its pid and waits to be killed."""
    if file_name == name and not Path(mark).exists():
        Path(mark).write_text(str(os.getpid()))
        threading.Event().wait()


def _hold_in_pool(env: Mapping[str, str]) -> Callable[[str], None] | None:
    name, mark = env.get("TRACESETS_TEST_POOL_HOLD_FILE"), env.get("TRACESETS_TEST_POOL_HOLD_MARK")
    if not name or not mark:
        return None
    return functools.partial(hold_in_pool, name=name, mark=mark)


def _serve_metrics(host: str, port: int | None) -> Callable[[], None] | None:
    """This worker's metrics on ``port``, if one is given; what closes it."""
    if port is None:
        return None
    from tracesets import metrics

    try:
        close = metrics.serve_worker(host, port)
    except OSError as exc:
        fail_usage(f"cannot serve metrics on {host}:{port}: {exc.strerror or exc}")
    log.info("worker metrics at http://%s:%d/metrics", host, port)
    return close


def worker(
    data_dir: DataDir = None,
    metrics_port: Annotated[
        int | None,
        typer.Option(
            min=1,
            max=65535,
            help="Serve this worker's Prometheus metrics at http://HOST:PORT/metrics "
            "(default: TRACESETS_WORKER_METRICS_PORT; none when unset).",
        ),
    ] = None,
    metrics_host: Annotated[
        str, typer.Option(help="Address the metrics port listens on.")
    ] = "127.0.0.1",
) -> None:
    """Inspect queued tracesets' files until stopped (SIGTERM or Ctrl-C); no HTTP but
    its metrics, if asked.

    Reads serve's settings (DATABASE_URL, TRACESETS_STORAGE_URL, the data folder): run
    one per machine (it uses every core), on any machine that shares the database and
    the store.
    """
    from tracesets.service.inspections import InspectionQueue
    from tracesets.service.regression import thresholds
    from tracesets.service.stores import open_store

    logging.basicConfig(
        level=logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    settings = _settings(data_dir)
    db = _database(settings)
    store = open_store(settings)
    queue = InspectionQueue(
        db,
        store,
        lease=timedelta(seconds=settings.inspection_lease),
        thresholds=thresholds(settings),
    )
    queue.reader.before_file = _hold(os.environ, queue.stopping)
    queue.reader.before_file_in_pool = _hold_in_pool(os.environ)

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        log.info("worker %s stopping (%s)", queue.owner, signal.Signals(signum).name)
        queue.stop()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    close_metrics = _serve_metrics(metrics_host, metrics_port or settings.worker_metrics_port)
    kind = "S3" if settings.storage_url else "local files"
    backend = "SQLite" if db.is_sqlite else "PostgreSQL"
    log.info("worker %s inspecting (%s, %s)", queue.owner, backend, kind)
    try:
        queue.run()
    finally:
        if close_metrics is not None:
            close_metrics()
        db.dispose()
    log.info("worker %s stopped", queue.owner)
