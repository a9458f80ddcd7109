"""``Client.add_files``, ``send_file`` and the asyncio twin against a real service."""

from __future__ import annotations

import asyncio
import hashlib
from pathlib import Path

import pytest

from tests.client.conftest import MakeClient
from tests.server import ServerProcess
from tracesets import AsyncClient, ClientError

RANKS_2 = {"shape": {"rankCount": 2}}


def entry(name: str, data: bytes) -> dict[str, object]:
    return {
        "name": name,
        "size": len(data),
        "role": "primary",
        "sha256": hashlib.sha256(data).hexdigest(),
    }


def test_send_file_adds_and_sends_then_complete(
    server: ServerProcess, workspace_token: str, tmp_path: Path, make_client: MakeClient
) -> None:
    trace = tmp_path / "t.json"
    trace.write_bytes(b"rank one")
    with make_client(server.url, workspace_token) as client:
        created = client.request_upload_urls(
            name="job", files=[entry("rank0.json", b"zero")], workload_metadata=RANKS_2
        )
        client.send_file(created.tracesetId, trace, name="rank1.json")
        status = client.upload_status(created.tracesetId)
        assert status.received == ["rank1.json"]
        assert [u.name for u in status.uploads] == ["rank0.json"]
        again = client.add_files(created.tracesetId, [entry("rank1.json", b"rank one")])
        assert again.tracesetId == created.tracesetId and again.uploads == []
        with pytest.raises(ClientError) as refused:
            client.add_files(created.tracesetId, [entry("rank1.json", b"other")])
        assert refused.value.status == 409
        assert "already in this traceset" in str(refused.value)


def test_the_rules_refuse_a_bad_entry_before_it_is_sent(
    server: ServerProcess, workspace_token: str, make_client: MakeClient
) -> None:
    with make_client(server.url, workspace_token) as client, pytest.raises(ClientError) as refused:
        client.add_files("0" * 32, [{"name": "../x", "size": 1, "role": "primary"}])
    assert refused.value.sent is False and "files[0].name" in str(refused.value)


def test_the_async_twin_adds_files(server: ServerProcess, workspace_token: str) -> None:
    async def run() -> list[str]:
        async with AsyncClient(server.url, workspace_token) as client:
            created = await client.request_upload_urls(
                name="job", files=[entry("rank0.json", b"zero")], workload_metadata=RANKS_2
            )
            added = await client.add_files(created.tracesetId, [entry("rank1.json", b"one")])
            assert added.tracesetId == created.tracesetId
            return [u.name for u in added.uploads]

    assert asyncio.run(run()) == ["rank1.json"]


@pytest.mark.parametrize(
    ("names", "why"),
    [
        (["a//b.json"], "empty segment"),
        (["./a.json"], ". segment"),
        (["C:x.json"], "drive such as C:"),
        (["x", "x/y.json"], "a file and the folder of"),
    ],
    ids=["empty-segment", "dot-segment", "drive", "file-and-folder"],
)
def test_names_not_in_one_spelling_are_refused_before_they_are_sent(
    server: ServerProcess, workspace_token: str, make_client: MakeClient, names: list[str], why: str
) -> None:
    entries = [entry(name, b"x") for name in names]
    with make_client(server.url, workspace_token) as client:
        with pytest.raises(ClientError, match=why) as refused:
            client.add_files("0" * 32, entries)
        assert refused.value.sent is False
        with pytest.raises(ClientError, match=why) as refused:
            client.request_upload_urls(name="job", files=entries, workload_metadata=RANKS_2)
        assert refused.value.sent is False
