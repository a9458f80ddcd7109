"""An upload of more files than one request declares goes as upload-url, then add-files:
each request at most 4,000 files (so that S3's URLs for them fit in the answer) and half
the body limit of their JSON. (The same at
100,000 files: ``tests/api/test_hundred_thousand_ranks.py``.)"""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest

from tests.server import ServerProcess
from tracesets import AsyncClient, Client, Traceset, jsontext
from tracesets.client import ClientError, protocol
from tracesets.vocabulary import MAX_BODY_BYTES, MAX_FILES_PER_REQUEST, MAX_FILES_PER_TRACESET


def entries(count: int, name_bytes: int = 10) -> list[dict[str, object]]:
    return [
        {"name": f"{i:06d}".ljust(name_bytes, "x"), "size": 1, "role": "primary"}
        for i in range(count)
    ]


def test_many_small_files_go_4000_a_request_in_order() -> None:
    files = entries(25_001)
    batches = protocol.declaration_batches(files)
    assert protocol.BATCH_FILES == 4_000 <= MAX_FILES_PER_REQUEST
    assert [len(b) for b in batches] == [4_000] * 6 + [1_001]
    assert [f for b in batches for f in b] == files


def test_long_names_go_fewer_a_request_within_the_body_limit() -> None:
    files = entries(20_000, name_bytes=1_000)
    batches = protocol.declaration_batches(files)
    assert [f for b in batches for f in b] == files
    for batch in batches:
        assert len(jsontext.dumps({"files": batch})) <= MAX_BODY_BYTES // 2 + 1_024
    assert len(batches) > 2


def test_a_whole_upload_is_checked_against_what_a_traceset_holds() -> None:
    body = protocol.upload_url_body(
        name="job",
        files=entries(MAX_FILES_PER_TRACESET),
        workload_metadata={"shape": {"rankCount": MAX_FILES_PER_TRACESET}},
        description=None,
    )
    assert len(body["files"]) == MAX_FILES_PER_TRACESET
    with pytest.raises(ClientError) as refused:
        protocol.upload_url_body(
            name="job",
            files=entries(MAX_FILES_PER_TRACESET + 1),
            workload_metadata={"shape": {"rankCount": 8}},
            description=None,
        )
    assert refused.value.problems[0].member == "files"


def test_both_clients_upload_a_folder_in_batches(
    server: ServerProcess, workspace_token: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three files a request: seven files go as upload-url, then add-files twice, and the
    traceset holds all seven, each received."""
    monkeypatch.setattr(protocol, "BATCH_FILES", 3)
    folder = tmp_path / "job"
    folder.mkdir()
    for rank in range(7):
        (folder / f"rank{rank}.json").write_bytes(b"{}" * (rank + 1))
    sent: list[str] = []

    def seen(request: httpx.Request) -> None:
        if request.method == "POST":
            sent.append(request.url.path.rsplit("/", 1)[1])

    with Client(server.url, workspace_token) as client:
        client._http.event_hooks["request"].append(seen)
        done = client.upload(folder, name="batched", workload_metadata={"shape": {"rankCount": 7}})
    assert sent == ["upload-url", "files", "files", "complete"]
    assert done.status == "ready" and sorted(f.name for f in done.files) == [
        f"rank{rank}.json" for rank in range(7)
    ]
    assert all(f.received for f in done.files)

    async def upload() -> Traceset:
        async with AsyncClient(server.url, workspace_token) as client:
            return await client.upload(
                folder, name="batched async", workload_metadata={"shape": {"rankCount": 7}}
            )

    again = asyncio.run(upload())
    assert again.status == "ready" and len(again.files) == 7
