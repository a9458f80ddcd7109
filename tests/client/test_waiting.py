"""Waiting for the service to read the traces, and a bad token found before any hashing."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.client.conftest import MakeClient
from tests.inspection.kineto_writer import kineto_trace
from tests.server import ServerProcess
from tracesets import AsyncClient, Client, ClientError
from tracesets.problems import Problem


def traces(root: Path, ranks: range, world_size: int) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for rank in ranks:
        (root / f"rank{rank}.json").write_bytes(kineto_trace(rank, world_size))
    return root


def test_upload_with_wait_returns_the_inspected_traceset(
    server: ServerProcess, workspace_token: str, tmp_path: Path, make_client: MakeClient
) -> None:
    with make_client(server.url, workspace_token) as client:
        done = client.upload(
            traces(tmp_path / "run", range(2), 8),
            name="two of eight",
            workload_metadata={"shape": {"rankCount": 8}},
            wait=60,
        )
        assert done.inspection is not None and done.inspection.status == "done"
        assert done.inspection.missingRankCount == 6
        promoted = client.promote_traceset(done.id)
    assert promoted.warnings == done.inspection.warnings
    assert any("6 of 8 declared ranks have no trace" in w for w in promoted.warnings)


def test_wait_for_inspection_after_a_plain_upload(
    server: ServerProcess, workspace_token: str, tmp_path: Path
) -> None:
    async def run() -> None:
        async with AsyncClient(server.url, workspace_token) as client:
            ready = await client.upload(
                traces(tmp_path / "run", range(4), 4),
                name="four",
                workload_metadata={"shape": {"rankCount": 4}},
            )
            done = await client.wait_for_inspection(ready.id)
            assert done.inspection is not None and done.inspection.status == "done"
            assert done.inspection.ranksFound == [0, 1, 2, 3]

    asyncio.run(run())


def _traceset(inspection_status: str | None) -> dict[str, Any]:
    now = datetime.now(UTC).isoformat()
    inspection: dict[str, Any] | None = None
    if inspection_status is not None:
        inspection = {
            "status": inspection_status,
            "ranksFound": [],
            "worldSize": None,
            "worldSizes": [],
            "missingRanks": [],
            "missingRankCount": 0,
            "duplicateRanks": [],
            "unreadable": [],
            "warnings": [],
            "files": [],
        }
    return {
        "id": "t1",
        "name": "n",
        "description": None,
        "status": "ready",
        "createdAt": now,
        "updatedAt": now,
        "promotedAt": None,
        "files": [],
        "fileCount": 0,
        "fileBytes": 0,
        "filesReceived": 0,
        "filesNextCursor": None,
        "workloadMetadata": None,
        "rankCountDerived": None,
        "inspection": inspection,
    }


@pytest.fixture
def answering(make_client: MakeClient) -> Callable[[list[str | None]], tuple[Client, list[str]]]:
    return lambda statuses: _answering(statuses, make_client)


def _answering(statuses: list[str | None], make_client: MakeClient) -> tuple[Client, list[str]]:
    """A client whose service answers GETs of a traceset with these inspection statuses."""
    seen: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request.url.path)
        status = statuses[min(len(seen), len(statuses)) - 1]
        return httpx.Response(200, json=_traceset(status))

    return make_client("http://tracesets.test", "t", transport=httpx.MockTransport(answer)), seen


def test_wait_for_inspection_polls_until_it_is_no_longer_pending(
    answering: Callable[[list[str | None]], tuple[Client, list[str]]],
) -> None:
    client, seen = answering(["pending", "pending", "done"])
    done = client.wait_for_inspection("t1", interval=0)
    assert done.inspection is not None and done.inspection.status == "done"
    assert seen == ["/api/v1/tracesets/t1"] * 3


def test_wait_for_inspection_is_bounded(
    answering: Callable[[list[str | None]], tuple[Client, list[str]]],
) -> None:
    client, seen = answering(["pending"])
    with pytest.raises(ClientError, match="still being inspected after 0 s"):
        client.wait_for_inspection("t1", timeout=0)
    assert len(seen) == 1


def test_a_traceset_without_inspection_is_returned_at_once(
    answering: Callable[[list[str | None]], tuple[Client, list[str]]],
) -> None:
    client, seen = answering([None])
    assert client.wait_for_inspection("t1").inspection is None and len(seen) == 1


def test_a_wrong_token_is_refused_before_any_file_is_hashed(
    server: ServerProcess, tmp_path: Path, make_client: MakeClient
) -> None:
    hashed: list[int] = []
    with pytest.raises(ClientError) as caught:
        make_client(server.url, "tsk_not-a-token").upload(
            traces(tmp_path, range(1), 1),
            name="n",
            workload_metadata={"shape": {"rankCount": 1}},
            hash_progress=lambda done, total: hashed.append(done),
        )
    assert caught.value.status == 401 and hashed == []


def scoped_token(server: ServerProcess, workspace: str, *scopes: str) -> str:
    args = ["token", "create", "--workspace", workspace, "--data-dir", str(server.data_dir)]
    for scope in scopes:
        args += ["--scope", scope]
    made = server.cli(*args)
    assert made.returncode == 0, made.stderr
    return made.stdout.strip()


def test_a_token_without_write_is_refused_before_any_file_is_hashed(
    server: ServerProcess, tmp_path: Path, make_client: MakeClient
) -> None:
    token = scoped_token(server, "ro", "read", "promote")
    hashed: list[int] = []
    with pytest.raises(ClientError) as caught:
        make_client(server.url, token).upload(
            traces(tmp_path, range(1), 1),
            name="n",
            workload_metadata={"shape": {"rankCount": 1}},
            hash_progress=lambda done, total: hashed.append(done),
        )
    assert caught.value.status == 403 and hashed == []
    assert str(caught.value) == "This token does not have the write scope"
    with make_client(server.url, token) as client:
        assert list(client.list_tracesets()) == []


def test_the_async_client_refuses_a_token_without_write_before_hashing(
    server: ServerProcess, tmp_path: Path
) -> None:
    token = scoped_token(server, "ro-async", "read")
    hashed: list[int] = []

    async def upload() -> None:
        async with AsyncClient(server.url, token) as client:
            await client.upload(
                traces(tmp_path, range(1), 1),
                name="n",
                workload_metadata={"shape": {"rankCount": 1}},
                hash_progress=lambda done, total: hashed.append(done),
            )

    with pytest.raises(ClientError) as caught:
        asyncio.run(upload())
    assert caught.value.status == 403 and "write scope" in str(caught.value) and hashed == []


def test_whoami_names_the_workspace_and_scopes_of_the_token(
    server: ServerProcess, make_client: MakeClient
) -> None:
    token = scoped_token(server, "who", "promote", "read")
    with make_client(server.url, token) as client:
        who = client.whoami()
    assert (who.workspace, who.scopes) == ("who", ["read", "promote"])

    async def ask() -> tuple[str, list[str]]:
        async with AsyncClient(server.url, token) as client:
            answer = await client.whoami()
            return answer.workspace, list(answer.scopes)

    assert asyncio.run(ask()) == ("who", ["read", "promote"])


def test_str_of_a_client_error_gives_every_problem_a_line() -> None:
    error = ClientError(
        "a must be 1",
        problems=[Problem("a", 2, "a must be 1"), Problem("files[0].size", -1, "too small")],
    )
    assert str(error) == "a must be 1\nfiles[0].size: too small"
    assert [p.member for p in error.problems] == ["a", "files[0].size"]
