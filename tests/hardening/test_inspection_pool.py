"""A worker's pool of processes: one of them dying loses no file, and leaves no process.

``tracesets worker`` reads a batch's small files in a pool of processes. Here the first
pool process to read ``rank-3.json`` holds there (``TRACESETS_TEST_POOL_HOLD_*``) and
writes its pid, so the test knows which process to kill and when.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.flows import inspected
from tests.hardening.test_workers import RUN, checks_run, recorded, run_files
from tests.server import ServerProcess
from tests.workers import Worker, client, file_rows, upload_ready, wait_for, workers_service

METADATA = {"shape": {"rankCount": RUN.world}, "parallelism": {"tp": RUN.tp, "dp": RUN.dp}}
HELD = "rank-3.json"


@pytest.fixture
def service(tmp_path: Path) -> Iterator[ServerProcess]:
    process = workers_service(tmp_path / "service")
    process.start()
    yield process
    process.stop()


def holding_worker(service: ServerProcess, mark: Path) -> Worker:
    return Worker(
        service,
        "pooled",
        TRACESETS_TEST_POOL_HOLD_FILE=HELD,
        TRACESETS_TEST_POOL_HOLD_MARK=str(mark),
    )


def alive(pid: int) -> bool:
    """Running (a zombie left to a parent that does not reap it counts as gone).

    A process that ends between the open of its ``stat`` and the read fails the read
    with ESRCH, not ENOENT: gone too (one CI run in three met it)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


def test_a_pool_process_killed_mid_file_loses_no_file(
    service: ServerProcess, tmp_path: Path
) -> None:
    files = run_files(RUN)
    mark = tmp_path / "held"
    workers: list[Worker] = []
    try:
        with client(service) as api:
            traceset_id = upload_ready(api, files, METADATA)
            worker = holding_worker(service, mark)
            workers.append(worker)
            pid = int(wait_for(lambda: mark.exists() and mark.read_text(), what="the pool to hold"))
            assert pid != worker.proc.pid
            os.kill(pid, signal.SIGKILL)
            inspection: dict[str, Any] = inspected(api, traceset_id)["inspection"]
        # Every rank's figures, and what the checks find in them: no file lost or cut.
        assert inspection["status"] == "done", inspection["warnings"]
        assert [r["rank"] for r in inspection["perRank"]] == list(range(RUN.world))
        assert inspection["desyncedGroups"] == [RUN.dp_group(5)[0]]
        assert inspection["stragglers"] == [7]
        rows = file_rows(service, traceset_id)
        assert all(status == "done" for status, _, _ in rows.values()), rows
        # The held file failed once (its pool died) and was read again; the worker lived on.
        assert rows[HELD][:2] == ("done", 2)
        assert worker.lines("BrokenProcessPool") and worker.proc.poll() is None
        assert recorded(workers) == sorted(files)
        assert len(checks_run(workers)) == 1
    finally:
        for w in workers:
            assert w.stop() == 0, w.log.read_text()


def test_a_worker_killed_leaves_no_pool_process_behind(
    service: ServerProcess, tmp_path: Path
) -> None:
    mark = tmp_path / "held"
    with client(service) as api:
        upload_ready(api, run_files(RUN), METADATA)
        worker = holding_worker(service, mark)
        try:
            pid = int(wait_for(lambda: mark.exists() and mark.read_text(), what="the pool to hold"))
            assert alive(pid)
        finally:
            assert worker.stop(signal.SIGKILL) == -signal.SIGKILL
    wait_for(lambda: not alive(pid), what=f"pool process {pid} to end with its worker")


def test_a_process_that_ends_while_its_stat_is_read_counts_as_gone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The race ``alive`` must survive: /proc/PID/stat opened, the process gone, the read
    refused with ESRCH (as the kernel does for a task that exited after the open)."""

    def vanished(self: Path, *args: object, **kwargs: object) -> str:
        raise ProcessLookupError(3, "No such process")

    monkeypatch.setattr(Path, "read_text", vanished)
    assert not alive(os.getpid())
