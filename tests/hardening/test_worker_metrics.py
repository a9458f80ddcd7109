"""``tracesets worker --metrics-port``: a worker's own Prometheus metrics, under the
service's names, counted in the process that records the files (not its pool)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.analysis.run_writer import Run, rank_trace
from tests.flows import inspected
from tests.server import ServerProcess, prometheus_series, reserve_port
from tests.workers import Worker, client, upload_ready, wait_for, workers_service

#: Four ranks: enough small files that the worker's pool of processes reads them.
RUN = Run(tp=2, dp=2, steps=2, kernels_per_step=3)
METADATA = {"shape": {"rankCount": RUN.world}, "parallelism": {"tp": RUN.tp, "dp": RUN.dp}}
DONE = 'tracesets_inspection_files_total{outcome="done"}'
HEARTBEAT = "tracesets_inspection_heartbeat_timestamp_seconds"


@pytest.fixture
def service(tmp_path: Path) -> Iterator[ServerProcess]:
    process = workers_service(tmp_path / "service")
    process.start()
    yield process
    process.stop()


def scrape(worker: Worker, port: int) -> str | None:
    """The worker's exposition; None while its port does not answer yet."""
    assert worker.proc.poll() is None, worker.log.read_text()
    try:
        answer = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=60)
    except httpx.ConnectError:
        return None
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("text/plain")
    return answer.text


def test_a_worker_serves_the_files_it_inspected_and_its_heartbeat(
    service: ServerProcess,
) -> None:
    files = {f"rank-{rank}.json": rank_trace(RUN, rank) for rank in range(RUN.world)}
    with reserve_port() as reserved:
        port = reserved.getsockname()[1]
        worker = Worker(service, "metrics", "--metrics-port", str(port))
        try:
            wait_for(lambda: scrape(worker, port), what="the worker's metrics port")
            with client(service) as api:
                queued_at = time.time()
                traceset_id = upload_ready(api, files, METADATA)
                inspection = inspected(api, traceset_id)["inspection"]
            assert inspection["status"] == "done", inspection["warnings"]
            # Counted just after the record commits: the scrape may come first.
            text: str = wait_for(
                lambda: (t := scrape(worker, port)) and DONE in t and t,
                what="the worker to count its files",
            )
            series = prometheus_series(text)
            assert series[DONE] == len(files)
            assert 'tracesets_inspection_files_total{outcome="failed"}' not in series
            assert series["tracesets_inspection_takeovers_total"] == 0
            assert queued_at <= series[HEARTBEAT] <= time.time()
            # A worker's figures only: no request's, none the services read from the
            # database (a sum across targets would count those twice), no id nor name.
            assert {name.split("{")[0] for name in series} == {
                "tracesets_inspection_files_total",
                "tracesets_inspection_takeovers_total",
                HEARTBEAT,
            }
            assert traceset_id not in text and worker.owner not in text
        finally:
            assert worker.stop() == 0, worker.log.read_text()
    assert "worker metrics at http://127.0.0.1:" in worker.log.read_text()


def listening(pid: int) -> set[str]:
    """The TCP sockets process ``pid`` listens on (Linux's /proc), by inode."""
    listeners = set()
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A":  # LISTEN
                listeners.add(fields[9])
    held = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        target = str(fd.readlink()) if fd.is_symlink() else ""
        if target.startswith("socket:["):
            held.add(target[len("socket:[") : -1])
    return held & listeners


def test_a_worker_opens_no_port_unless_asked(service: ServerProcess) -> None:
    worker = Worker(service, "quiet")
    try:
        assert worker.owner  # it has started, and opened whatever it opens at start
        assert listening(worker.proc.pid) == set()
        assert worker.lines("worker metrics at") == []
    finally:
        assert worker.stop() == 0, worker.log.read_text()
