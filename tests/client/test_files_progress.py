"""``files_progress``: each file's PUT reported as it begins and arrives, by both clients."""

from __future__ import annotations

import os
from pathlib import Path

import httpx

from tests.client.conftest import MakeClient
from tests.client.test_retries import NO_WAIT, MockService
from tracesets.client.core import UploadPlan
from tracesets.client.files import collect, plan
from tracesets.client.models import UploadTarget


def test_every_file_begins_and_arrives_with_at_most_concurrency_in_flight(
    tmp_path: Path, make_client: MakeClient
) -> None:
    for rank in range(40):
        (tmp_path / f"rank-{rank:02d}.json").write_bytes(os.urandom(100 + rank))
    seen: list[tuple[int, int, list[str]]] = []
    service = MockService()
    plan = UploadPlan.checked(
        collect(tmp_path), name="job", workload_metadata={"shape": {"rankCount": 40}}
    )
    client = make_client(
        "http://service.test",
        "tok",
        transport=httpx.MockTransport(service),
        retry=NO_WAIT,
        concurrency=4,
    )
    client.upload_plan(
        plan, files_progress=lambda arrived, count, flying: seen.append((arrived, count, flying))
    )
    assert seen[0] == (0, 40, []) and seen[-1] == (40, 40, [])
    assert all(count == 40 and len(flying) <= 4 for _, count, flying in seen)
    arrivals = [arrived for arrived, _, _ in seen]
    assert arrivals == sorted(arrivals) and len(set(arrivals)) == 41
    began = {name for _, _, flying in seen for name in flying}
    assert began == {f"rank-{rank:02d}.json" for rank in range(40)}
    assert len(service.stored) == 40


def test_the_largest_files_are_sent_first(tmp_path: Path) -> None:
    """So that one big file does not start last and finish alone."""
    for name, size in (("small", 10), ("big", 3_000), ("middle", 200)):
        (tmp_path / name).write_bytes(os.urandom(size))
    files = collect(tmp_path)
    uploads = [
        UploadTarget.model_validate(
            {
                "name": f.name,
                "role": "primary",
                "method": "PUT",
                "url": f"http://s/{f.name}",
                "headers": {},
                "expiresAt": "2026-01-01T00:00:00.000Z",
            }
        )
        for f in files
    ]
    assert [put.file.name for put in plan(files, uploads)] == ["big", "middle", "small"]
