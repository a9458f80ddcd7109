"""GET /api/v1/usage, and the quota of bytes a workspace may hold (TRACESETS_QUOTA_BYTES)."""

from __future__ import annotations

import secrets
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.flows import problems, request_urls, send, spec, upload
from tests.server import FRESH_CONNECTIONS, ServerProcess, uses_s3

QUOTA = 1000
NO_FILES = {"pending": 0, "ready": 0, "promoted": 0}


def client(server: ServerProcess, token: str) -> httpx.Client:
    return httpx.Client(
        base_url=server.url,
        headers={"Authorization": f"Bearer {token}"},
        timeout=60,
        limits=FRESH_CONNECTIONS,
    )


def usage(api: httpx.Client) -> dict[str, Any]:
    answer = api.get("/api/v1/usage")
    assert answer.status_code == 200, answer.text
    found: dict[str, Any] = answer.json()
    return found


def declare(api: httpx.Client, size: int) -> httpx.Response:
    """upload-url for one supporting file of ``size`` bytes (nothing is sent)."""
    body = {"name": "n", "files": [{"name": "log.txt", "size": size, "role": "supporting"}]}
    return api.post("/api/v1/tracesets/upload-url", json=body)


def test_usage_counts_the_workspace_tracesets_files_and_bytes(
    server: ServerProcess, api: httpx.Client
) -> None:
    assert usage(api) == {
        "tracesets": NO_FILES,
        "files": 0,
        "bytesStored": 0,
        "bytesPending": 0,
        "quotaBytes": None,
    }
    upload(api, {"rank0.json": b"r" * 10})  # ready
    promoted = upload(api, {"rank0.json": b"p" * 20, "rank1.json": b"q" * 30})
    assert api.post(f"/api/v1/tracesets/{promoted['id']}/promote", json={}).status_code == 200
    pending = request_urls(api, {"rank0.json": b"a" * 40, "rank1.json": b"b" * 50})
    first = next(u for u in pending["uploads"] if u["name"] == "rank0.json")
    send(first, b"a" * 40)  # in a traceset still pending
    # The service receives a local file's PUT itself; S3's it learns of at complete.
    received = 0 if uses_s3() else 40
    assert usage(api) == {
        "tracesets": {"pending": 1, "ready": 1, "promoted": 1},
        "files": 5,
        "bytesStored": 10 + 20 + 30 + received,
        "bytesPending": 40 - received + 50,
        "quotaBytes": None,
    }
    with client(server, server.new_token("ws-" + secrets.token_hex(6))) as other:
        assert usage(other)["tracesets"] == NO_FILES


@pytest.mark.parametrize("scope", ["read", "write"])
def test_usage_needs_the_read_scope(server: ServerProcess, scope: str) -> None:
    workspace = "ws-" + secrets.token_hex(6)
    created = server.cli(
        "token", "create", "--workspace", workspace, "--scope", scope,
        "--data-dir", str(server.data_dir),
    )  # fmt: skip
    assert created.returncode == 0, created.stderr
    with client(server, created.stdout.strip()) as api:
        answer = api.get("/api/v1/usage")
    if scope == "read":
        assert answer.status_code == 200, answer.text
    else:
        assert answer.status_code == 403, answer.text
        assert "read scope" in answer.json()["detail"]


@pytest.fixture(scope="module")
def quota_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    process = ServerProcess(
        tmp_path_factory.mktemp("quota"), extra_env={"TRACESETS_QUOTA_BYTES": str(QUOTA)}
    )
    process.start()
    yield process
    process.stop()


@pytest.fixture
def quota_api(quota_server: ServerProcess) -> Iterator[httpx.Client]:
    """A fresh workspace of the service with a quota of QUOTA bytes."""
    with client(quota_server, quota_server.new_token("ws-" + secrets.token_hex(6))) as api:
        yield api


def test_upload_url_past_the_quota_is_413_and_stores_nothing(quota_api: httpx.Client) -> None:
    assert declare(quota_api, 600).status_code == 201
    before = usage(quota_api)
    assert before["quotaBytes"] == QUOTA
    refused = declare(quota_api, 401)
    assert refused.status_code == 413, refused.text
    assert refused.headers["content-type"] == "application/problem+json"
    assert refused.json()["detail"] == (
        "This upload would bring the workspace to 1,001 bytes, past its quota of 1,000 bytes "
        "(600 stored or declared)"
    )
    assert problems(refused)[0]["member"] == "files"
    assert usage(quota_api) == before
    assert len(quota_api.get("/api/v1/tracesets").json()["items"]) == 1
    assert declare(quota_api, 400).status_code == 201  # up to the quota exactly


def test_add_files_past_the_quota_is_413_and_adds_nothing(quota_api: httpx.Client) -> None:
    data = b"x" * 300
    created = request_urls(quota_api, {"rank0.json": data})
    [target] = created["uploads"]
    send(target, data)  # stored bytes count as declared ones do
    path = f"/api/v1/tracesets/{created['tracesetId']}/files"
    more = {"files": [spec("rank1.json", b"y" * 600), spec("rank2.json", b"z" * 101)]}
    refused = quota_api.post(path, json=more)
    assert refused.status_code == 413, refused.text
    assert "to 1,001 bytes, past its quota of 1,000 bytes (300 stored" in refused.json()["detail"]
    listed = quota_api.get(path).json()["items"]
    assert [f["name"] for f in listed] == ["rank0.json"]
    fits = {"files": [spec("rank1.json", b"y" * 700)]}
    assert quota_api.post(path, json=fits).status_code == 201
    # A file declared again exactly as before adds no bytes: answered, not refused.
    assert quota_api.post(path, json=fits).status_code == 201
    assert usage(quota_api)["bytesStored"] + usage(quota_api)["bytesPending"] == QUOTA


def test_a_deleted_traceset_gives_its_bytes_back(quota_api: httpx.Client) -> None:
    first = declare(quota_api, QUOTA)
    assert first.status_code == 201
    assert declare(quota_api, 1).status_code == 413
    deleted = quota_api.delete(f"/api/v1/tracesets/{first.json()['tracesetId']}")
    assert deleted.status_code == 204
    assert declare(quota_api, QUOTA).status_code == 201


def test_uploads_at_once_never_pass_the_quota_together(quota_api: httpx.Client) -> None:
    """Eight requests of 300 bytes sent together: exactly three fit in 1,000 bytes, on
    SQLite (one writer) and PostgreSQL (the workspace's lock) alike."""
    start = threading.Barrier(8)
    statuses: list[int] = []

    def one() -> None:
        start.wait()
        statuses.append(declare(quota_api, 300).status_code)

    threads = [threading.Thread(target=one) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(statuses) == [201] * 3 + [413] * 5
    assert usage(quota_api)["bytesPending"] == 900


def test_a_zero_quota_refuses_every_byte(tmp_path: Path) -> None:
    process = ServerProcess(tmp_path, extra_env={"TRACESETS_QUOTA_BYTES": "0"})
    process.start()
    try:
        with client(process, process.new_token("ws-" + secrets.token_hex(6))) as api:
            assert declare(api, 1).status_code == 413
            assert declare(api, 0).status_code == 201  # an empty file holds no bytes
    finally:
        process.stop()
