"""The client reads answers as exactly as the service stores them, and pages through files.

A stored 5,000-digit integer or ``0.1000000000000000000001`` comes back as the literal the
service keeps (``JsonNumber``), in lists and in one traceset alike; a traceset of more
files than one answer holds comes back whole from ``get_traceset`` and ``iter_files``.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from tests.client.conftest import MakeClient
from tests.server import ServerProcess
from tracesets import AsyncClient
from tracesets.jsontext import JsonNumber

HUGE = "9" * 5_000
TINY = "0.1000000000000000000001"
METADATA = '{"shape": {"rankCount": 8}, "huge": ' + HUGE + ', "lr": ' + TINY + "}"


def create(server: ServerProcess, token: str, metadata: str, names: list[str]) -> str:
    """A pending traceset whose metadata is sent as the text given, digits and all."""
    files = ", ".join(f'{{"name": "{n}", "size": 1, "role": "primary"}}' for n in names)
    body = f'{{"name": "exact", "files": [{files}], "workloadMetadata": {metadata}}}'
    answer = httpx.post(
        f"{server.url}/api/v1/tracesets/upload-url",
        content=body.encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        timeout=120,
    )
    assert answer.status_code == 201, answer.text[:300]
    traceset_id: str = answer.json()["tracesetId"]
    return traceset_id


def exact(metadata: dict[str, Any] | None) -> None:
    assert metadata is not None
    assert metadata["huge"] == JsonNumber(HUGE)
    assert metadata["lr"] == JsonNumber(TINY)
    assert metadata["shape"] == {"rankCount": 8}


def test_list_and_get_keep_every_digit(
    server: ServerProcess, workspace_token: str, make_client: MakeClient
) -> None:
    made = create(server, workspace_token, METADATA, ["rank0.json"])
    with make_client(server.url, workspace_token) as client:
        (listed,) = list(client.list_tracesets())
        assert listed.id == made and listed.fileCount == 1
        exact(listed.workloadMetadata)
        exact(client.get_traceset(made).workloadMetadata)


def test_the_async_client_keeps_every_digit(server: ServerProcess, workspace_token: str) -> None:
    made = create(server, workspace_token, METADATA, ["rank0.json"])

    async def read() -> None:
        async with AsyncClient(server.url, workspace_token) as client:
            listed = [t async for t in client.list_tracesets()]
            assert [t.id for t in listed] == [made]
            exact(listed[0].workloadMetadata)
            exact((await client.get_traceset(made)).workloadMetadata)

    asyncio.run(read())


@pytest.fixture
def many(server: ServerProcess, workspace_token: str) -> tuple[str, list[str]]:
    names = [f"rank-{i:04d}.json" for i in range(2_345)]
    return create(server, workspace_token, '{"shape": {"rankCount": 8}}', names), names


def test_get_traceset_brings_every_file_past_the_first_page(
    server: ServerProcess,
    workspace_token: str,
    many: tuple[str, list[str]],
    make_client: MakeClient,
) -> None:
    made, names = many
    with make_client(server.url, workspace_token) as client:
        got = client.get_traceset(made)
        assert [f.name for f in got.files] == names
        assert got.filesNextCursor is None and got.fileCount == len(names)
        assert [f.name for f in client.iter_files(made)] == names
        first = httpx.get(
            f"{server.url}/api/v1/tracesets/{made}",
            headers={"Authorization": f"Bearer {workspace_token}"},
        ).json()
        assert len(first["files"]) == 1_000
        rest = [f.name for f in client.iter_files(made, first["filesNextCursor"])]
        assert rest == names[1_000:]
        status = client.upload_status(made)
        assert [u.name for u in status.uploads] == names and status.nextCursor is None


def test_the_async_client_pages_through_files(
    server: ServerProcess, workspace_token: str, many: tuple[str, list[str]]
) -> None:
    made, names = many

    async def read() -> None:
        async with AsyncClient(server.url, workspace_token) as client:
            got = await client.get_traceset(made)
            assert [f.name for f in got.files] == names
            assert got.filesNextCursor is None
            assert [f.name async for f in client.iter_files(made)] == names
            status = await client.upload_status(made)
            assert [u.name for u in status.uploads] == names and status.nextCursor is None

    asyncio.run(read())
