"""Promotion of a traceset whose inspection failed succeeds, and its warnings say why.

The store loses the traces before any worker reads them, so every attempt fails and the
inspection is recorded as failed; promotion's rules are the contract's, so it goes
through, but its answer must not read as if the traces agreed with the declaration.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.flows import inspected
from tests.server import ServerProcess
from tests.workers import Worker, client, upload_ready, workers_service
from tracesets.service.stores import open_store
from tracesets.settings import Settings


@pytest.fixture
def service(tmp_path: Path) -> Iterator[ServerProcess]:
    process = workers_service(tmp_path / "service")
    process.start()
    yield process
    process.stop()


def test_promoting_after_a_failed_inspection_warns_that_it_failed_and_why(
    service: ServerProcess,
) -> None:
    worker: Worker | None = None
    try:
        with client(service) as api:
            traceset_id = upload_ready(api, {"rank-0.json": b"{}"}, {"shape": {"rankCount": 1}})
            store = open_store(Settings.from_env(service.env, data_dir=service.data_dir))
            store.delete_prefix(traceset_id)  # no read of the traces can succeed
            worker = Worker(service, "0")
            failed = inspected(api, traceset_id)["inspection"]
            assert failed["status"] == "failed"
            answer = api.post(f"/api/v1/tracesets/{traceset_id}/promote", json={})
        assert answer.status_code == 200, answer.text
        body = answer.json()
        assert body["status"] == "promoted" and body["inspection"]["status"] == "failed"
        [warning] = body["warnings"]
        assert warning.startswith("The traces' inspection failed, so what they say against ")
        assert warning.split(": ", 1)[1].startswith("rank-0.json: ")  # why, from the record
    finally:
        if worker is not None:
            worker.stop()
