"""``tracesets worker`` processes share one traceset's files, and lose none of them.

Each test has a service of its own that leaves inspection to its workers, on the run's
backends: SQLite and a local folder shared by the processes, or PostgreSQL and S3.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.analysis.run_writer import Run, rank_trace
from tests.flows import inspected
from tests.server import ServerProcess
from tests.workers import (
    Worker,
    client,
    file_rows,
    inspection_state,
    upload_ready,
    wait_for,
    workers_service,
)
from tracesets.service.inspections import MAX_BATCH_FILES
from tracesets.service.stores import open_store
from tracesets.settings import Settings

#: 48 ranks, tp = 4 by dp = 12; rank 5 lost one data-parallel all-reduce, rank 7 is slow.
RUN = Run(tp=4, dp=12, steps=3, kernels_per_step=4, skip={5: 1}, slow={7: 2.0})
METADATA = {"shape": {"rankCount": RUN.world}, "parallelism": {"tp": RUN.tp, "dp": RUN.dp}}


def run_files(run: Run) -> dict[str, bytes]:
    return {f"rank-{rank}.json": rank_trace(run, rank) for rank in range(run.world)}


@pytest.fixture
def service(tmp_path: Path) -> Iterator[ServerProcess]:
    process = workers_service(tmp_path / "service")
    process.start()
    yield process
    process.stop()


@pytest.fixture
def short_lease_service(tmp_path: Path) -> Iterator[ServerProcess]:
    process = workers_service(tmp_path / "service", TRACESETS_INSPECTION_LEASE="3")
    process.start()
    yield process
    process.stop()


def recorded(workers: list[Worker]) -> list[str]:
    """The files whose results the workers recorded, one entry per recording."""
    lines = [line for w in workers for line in w.lines(" inspected by ")]
    return sorted(line.split("file ", 1)[1].split(" of traceset", 1)[0] for line in lines)


def checks_run(workers: list[Worker]) -> list[str]:
    return [line for w in workers for line in w.lines("checks across ranks run by")]


def stop_all(workers: list[Worker]) -> None:
    for worker in workers:
        assert worker.stop() in (0, -signal.SIGKILL), worker.log.read_text()


def test_three_workers_inspect_every_file_once_and_check_the_ranks_once(
    service: ServerProcess,
) -> None:
    files = run_files(RUN)
    workers: list[Worker] = []
    try:
        with client(service) as api:
            traceset_id = upload_ready(api, files, METADATA)
            workers = [Worker(service, str(n)) for n in range(3)]
            owners = {worker.owner for worker in workers}
            inspection: dict[str, Any] = inspected(api, traceset_id)["inspection"]
        assert inspection["status"] == "done", inspection["warnings"]
        assert inspection["perRankCount"] == RUN.world
        assert [r["rank"] for r in inspection["perRank"]] == list(range(RUN.world))
        # The checks saw every file, whoever read it: the desync and the straggler.
        assert inspection["desyncedGroups"] == [RUN.dp_group(5)[0]]
        assert inspection["stragglers"] == [7]
        rows = file_rows(service, traceset_id)
        assert set(rows) == set(files)
        assert all(status == "done" and attempts == 1 for status, attempts, _ in rows.values())
        assert {owner for _, _, owner in rows.values()} <= owners
        assert recorded(workers) == sorted(files)
        assert len(checks_run(workers)) == 1
        assert inspection_state(service, traceset_id) == (
            "done",
            checks_run(workers)[0].split()[-1],
        )
    finally:
        stop_all(workers)


def holding(service: ServerProcess, traceset_id: str, holder: Worker) -> set[str]:
    """The files the holder claimed with the one it holds: running, on their first try."""
    rows = file_rows(service, traceset_id)
    held = {name for name, (_, _, owner) in rows.items() if owner == holder.owner}
    assert all(rows[name] == ("running", 1, holder.owner) for name in held), rows
    return held


def test_a_worker_killed_mid_file_loses_its_files_to_others_after_the_lease(
    short_lease_service: ServerProcess, tmp_path: Path
) -> None:
    service = short_lease_service
    # More files than one claim takes: the holder's claim leaves files to the others.
    run = Run(tp=4, dp=MAX_BATCH_FILES // 4 + 2, steps=2, kernels_per_step=4)
    files = run_files(run)
    mark = tmp_path / "held"
    workers: list[Worker] = []
    try:
        with client(service) as api:
            traceset_id = upload_ready(api, files, {"shape": {"rankCount": run.world}})
            holder = Worker(
                service,
                "holder",
                TRACESETS_TEST_HOLD_FILE="rank-0.json",
                TRACESETS_TEST_HOLD_MARK=str(mark),
            )
            workers.append(holder)
            wait_for(mark.exists, what="the holder to claim rank-0.json")
            held = holding(service, traceset_id, holder)
            assert "rank-0.json" in held and len(held) < len(files)
            others = [Worker(service, "b"), Worker(service, "c")]
            workers += others

            # The others read every other file while the holder keeps its claims alive:
            # the traceset's files are shared, not the traceset.
            def others_done() -> bool:
                rows = file_rows(service, traceset_id)
                return sum(s == "done" for s, _, _ in rows.values()) == len(files) - len(held)

            wait_for(others_done, what="the other workers to read the other files")
            assert holding(service, traceset_id, holder) == held
            assert inspection_state(service, traceset_id) == ("running", None)

            assert holder.stop(signal.SIGKILL) == -signal.SIGKILL
            inspection = inspected(api, traceset_id)["inspection"]
        assert inspection["status"] == "done" and inspection["perRankCount"] == run.world
        rows = file_rows(service, traceset_id)
        survivors = {worker.owner for worker in others}
        for name in held:
            status, attempts, owner = rows[name]
            assert status == "done" and attempts == 2 and owner in survivors, (name, rows[name])
        assert recorded(workers) == sorted(files) and not holder.lines(" inspected by ")
        assert len(checks_run(others)) == 1 and not checks_run([holder])
    finally:
        stop_all(workers)


def test_a_worker_told_to_stop_gives_its_files_back_at_once(
    service: ServerProcess, tmp_path: Path
) -> None:
    run = Run(tp=2, dp=2, steps=2, kernels_per_step=4)
    files = run_files(run)
    mark = tmp_path / "held"
    workers: list[Worker] = []
    try:
        with client(service) as api:
            traceset_id = upload_ready(api, files, {"shape": {"rankCount": run.world}})
            holder = Worker(
                service,
                "holder",
                TRACESETS_TEST_HOLD_FILE="rank-0.json",
                TRACESETS_TEST_HOLD_MARK=str(mark),
            )
            workers.append(holder)
            wait_for(mark.exists, what="the holder to claim rank-0.json")
            held = holding(service, traceset_id, holder)
            assert holder.stop(signal.SIGTERM) == 0, holder.log.read_text()
            # Given back, not left to lapse; the interrupted try is not a failed attempt.
            rows = file_rows(service, traceset_id)
            assert all(rows[name] == ("pending", 0, None) for name in held), rows
            assert len(holder.lines("given back")) == len(held) and holder.lines("stopped")
            workers.append(Worker(service, "next"))
            inspection = inspected(api, traceset_id)["inspection"]
        assert inspection["status"] == "done" and inspection["perRankCount"] == run.world
        rows = file_rows(service, traceset_id)
        assert all(status == "done" and attempts == 1 for status, attempts, _ in rows.values())
    finally:
        stop_all(workers)


def test_files_the_store_cannot_read_end_as_a_recorded_failure(service: ServerProcess) -> None:
    run = Run(tp=2, dp=1, steps=2, kernels_per_step=4)
    files = run_files(run)
    workers: list[Worker] = []
    try:
        with client(service) as api:
            traceset_id = upload_ready(api, files, {"shape": {"rankCount": run.world}})
            store = open_store(Settings.from_env(service.env, data_dir=service.data_dir))
            store.delete_prefix(traceset_id)  # the store lost them: no read can succeed
            workers.append(Worker(service, "0"))
            inspection = inspected(api, traceset_id)["inspection"]
        assert inspection["status"] == "failed"
        [warning] = inspection["warnings"]
        assert warning.startswith("The traces could not be inspected: rank-0.json: ")
        rows = file_rows(service, traceset_id)
        assert all(status == "failed" and attempts == 3 for status, attempts, _ in rows.values())
        assert len(checks_run(workers)) == 1
    finally:
        stop_all(workers)


def test_a_workspace_queued_behind_another_s_flood_is_inspected_at_its_turn(
    service: ServerProcess,
) -> None:
    """One worker: every claim in order, recorded before the next (one small file each)."""
    run = Run(tp=1, dp=1, steps=2, kernels_per_step=4)
    files = run_files(run)
    metadata = {"shape": {"rankCount": run.world}}
    worker: Worker | None = None
    try:
        with client(service, service.new_token("a-flood")) as flood_api:
            flood = [upload_ready(flood_api, files, metadata) for _ in range(6)]
        with client(service, service.new_token("b-late")) as late_api:
            late = upload_ready(late_api, files, metadata)
        worker = Worker(service, "0")
        lines = wait_for(
            lambda: len(worker.lines(" inspected by ")) == 7 and worker.lines(" inspected by "),
            what="the seven tracesets to be inspected",
        )
        order = [line.split(" of traceset ", 1)[1].split(" ", 1)[0] for line in lines]
        # Never served, both: the first by name; then the late one's turn, not the last.
        assert order == [flood[0], late, *flood[1:]]
    finally:
        if worker is not None:
            stop_all([worker])
