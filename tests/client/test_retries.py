"""Retries that cannot duplicate, through httpx's transport seam.

A mock service answers through ``httpx.MockTransport``; a flaky wrapper around the real
transport loses answers of the real service, to prove a retried upload-url makes one
traceset.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.client.conftest import MakeClient
from tests.server import ServerProcess
from tracesets import AsyncClient, Client, ClientError
from tracesets.client import RetryPolicy
from tracesets.client.protocol import COMPLETE_TIMEOUT
from tracesets.client.retry import retry_after

NO_WAIT = RetryPolicy(retries=3, backoff=0)
STORAGE = "https://storage.test"
NOW = "2026-01-01T00:00:00.000Z"
PROBLEM: dict[str, Any] = {"type": "urn:x", "title": "Refused", "errors": []}


def traceset_json(traceset_id: str, status: str = "ready") -> dict[str, Any]:
    return {
        "id": traceset_id,
        "name": "t",
        "description": None,
        "status": status,
        "createdAt": NOW,
        "updatedAt": NOW,
        "promotedAt": None,
        "fileCount": 0,
        "fileBytes": 0,
        "filesReceived": 0,
        "files": [],
        "filesNextCursor": None,
        "workloadMetadata": {"shape": {"rankCount": 1}},
        "rankCountDerived": 1,
    }


class MockService:
    """upload-url, add-files, PUTs to a fake storage, complete; failures scripted per route."""

    def __init__(
        self, uploads: Callable[[list[dict[str, Any]]], list[dict[str, Any]]] | None = None
    ) -> None:
        self.uploads = uploads or (
            lambda files: [
                {
                    "name": f["name"],
                    "role": f["role"],
                    "method": "PUT",
                    "url": f"{STORAGE}/{f['name']}",
                    "headers": {"x-amz-checksum-sha256": "abc"},
                    "expiresAt": NOW,
                }
                for f in files
            ]
        )
        self.failures: dict[str, list[int | type[Exception]]] = {}
        self.calls: list[httpx.Request] = []
        self.stored: dict[str, bytes] = {}
        self.put_headers: dict[str, httpx.Headers] = {}

    def fail(self, key: str, *outcomes: int | type[Exception]) -> None:
        self.failures[key] = list(outcomes)

    def _scripted(self, key: str) -> httpx.Response | None:
        queue = self.failures.get(key)
        if not queue:
            return None
        outcome = queue.pop(0)
        if isinstance(outcome, int):
            return httpx.Response(outcome, headers={"Retry-After": "0"}, text="try later")
        raise outcome("scripted failure")

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.calls.append(request)
        body = request.read()  # the whole body goes out before the answer is lost
        path = request.url.path
        if request.method == "GET" and path == "/api/v1/whoami":  # the client's token check
            return httpx.Response(200, json={"workspace": "default", "scopes": ["read", "write"]})
        if request.method == "POST" and path.endswith("/upload-url"):
            sent = json.loads(body)
            return self._scripted("upload-url") or httpx.Response(
                201, json={"tracesetId": "t1", "uploads": self.uploads(sent["files"])}
            )
        if request.method == "POST" and path.endswith("/files"):  # a later batch
            sent = json.loads(body)
            return self._scripted("add-files") or httpx.Response(
                201, json={"tracesetId": "t1", "uploads": self.uploads(sent["files"])}
            )
        if request.method == "PUT":
            scripted = self._scripted(f"PUT {path}")
            if scripted is not None:
                return scripted
            self.stored[path] = body
            self.put_headers[path] = request.headers
            return httpx.Response(200, headers={"ETag": '"e"'})  # S3's answer: empty body
        if path.endswith("/complete"):
            return httpx.Response(200, json=traceset_json("t1"))
        return httpx.Response(404, json={**PROBLEM, "status": 404, "detail": "no"})

    def upload_url_keys(self) -> list[str]:
        return [
            r.headers["Idempotency-Key"]
            for r in self.calls
            if r.url.path.endswith("/upload-url") and "Idempotency-Key" in r.headers
        ]


@pytest.fixture
def client_of(make_client: MakeClient) -> Callable[..., Client]:
    """A client (of either kind) of a mock service, retrying without waiting."""
    return lambda service, **kw: make_client(
        "http://service.test", "tok", transport=httpx.MockTransport(service), retry=NO_WAIT, **kw
    )


def files(tmp_path: Path, sizes: dict[str, int]) -> dict[str, bytes]:
    made = {}
    for name, size in sizes.items():
        (tmp_path / name).write_bytes(data := os.urandom(size))
        made[name] = data
    return made


def test_a_retried_upload_url_sends_the_same_idempotency_key(
    tmp_path: Path, client_of: Callable[..., Client]
) -> None:
    service = MockService()
    service.fail("upload-url", 503, httpx.ConnectError, httpx.ReadTimeout)
    made = files(tmp_path, {"a.bin": 10})
    traceset = client_of(service).upload(
        tmp_path, name="t", workload_metadata={"shape": {"rankCount": 1}}
    )
    assert traceset.id == "t1"
    keys = service.upload_url_keys()
    assert len(keys) == 4 and len(set(keys)) == 1 and len(keys[0]) == 36
    assert service.stored == {"/a.bin": made["a.bin"]}


def test_complete_waits_longer_than_other_requests_for_its_answer(
    tmp_path: Path, client_of: Callable[..., Client]
) -> None:
    """complete checks every file in the store (minutes for 100,000 files): its answer is
    waited for ``COMPLETE_TIMEOUT``, the other requests' for the client's timeout."""
    service = MockService()
    files(tmp_path, {"a.bin": 10})
    client_of(service, timeout=5.0).upload(
        tmp_path, name="t", workload_metadata={"shape": {"rankCount": 1}}
    )
    read_timeouts = {
        r.url.path.rsplit("/", 1)[-1]: r.extensions["timeout"]["read"] for r in service.calls
    }
    assert read_timeouts["complete"] == COMPLETE_TIMEOUT
    assert read_timeouts["upload-url"] == 5.0


def test_each_logical_request_has_its_own_key(client_of: Callable[..., Client]) -> None:
    service = MockService()
    client = client_of(service)
    spec = [{"name": "a", "size": 1, "role": "supporting"}]
    client.request_upload_urls(name="t", files=spec)
    client.request_upload_urls(name="t", files=spec)
    first, second = service.upload_url_keys()
    assert first != second


def test_a_retried_put_succeeds_and_progress_gives_back_the_lost_bytes(
    tmp_path: Path, client_of: Callable[..., Client]
) -> None:
    service = MockService()
    service.fail("PUT /big.bin", httpx.ReadError, 500, 429)
    made = files(tmp_path, {"big.bin": 3_000_000, "small.bin": 5})
    seen: list[int] = []
    client_of(service).upload(
        tmp_path,
        name="t",
        workload_metadata={"shape": {"rankCount": 1}},
        progress=lambda done, total: seen.append(done),
    )
    assert service.stored == {"/big.bin": made["big.bin"], "/small.bin": made["small.bin"]}
    puts = Counter(r.url.path for r in service.calls if r.method == "PUT")
    assert puts == {"/big.bin": 4, "/small.bin": 1}
    assert seen[-1] == 3_000_005 and max(seen) <= 3_000_005


def test_puts_send_the_given_headers_and_an_exact_length(
    tmp_path: Path, client_of: Callable[..., Client]
) -> None:
    service = MockService()
    made = files(tmp_path, {"a.bin": 1234})
    client_of(service).upload(tmp_path, name="t", workload_metadata={"shape": {"rankCount": 1}})
    headers = service.put_headers["/a.bin"]
    assert headers["x-amz-checksum-sha256"] == "abc"
    assert headers["content-length"] == "1234" and "transfer-encoding" not in headers
    assert "authorization" not in headers  # a signed URL carries its own authority
    assert len(made) == 1


def test_a_refused_put_is_not_retried(tmp_path: Path, client_of: Callable[..., Client]) -> None:
    service = MockService()
    service.fail("PUT /a.bin", 403)
    files(tmp_path, {"a.bin": 10})
    with pytest.raises(ClientError) as caught:
        client_of(service).upload(tmp_path, name="t", workload_metadata={"shape": {"rankCount": 1}})
    assert caught.value.status == 403 and "PUT a.bin answered 403" in str(caught.value)
    assert sum(r.method == "PUT" for r in service.calls) == 1
    assert not any(r.url.path.endswith("/complete") for r in service.calls)


def test_retries_run_out(tmp_path: Path, client_of: Callable[..., Client]) -> None:
    service = MockService()
    service.fail("upload-url", *[httpx.ConnectError] * 4)
    files(tmp_path, {"a.bin": 1})
    with pytest.raises(ClientError) as caught:
        client_of(service).upload(tmp_path, name="t", workload_metadata={"shape": {"rankCount": 1}})
    assert caught.value.status is None and "no answer" in caught.value.detail
    assert len(service.upload_url_keys()) == 4


def test_multipart_uploads_put_each_part_range(
    tmp_path: Path, client_of: Callable[..., Client]
) -> None:
    part_size = 1_000_000

    def multipart(specs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        targets = []
        for f in specs:
            sizes = [min(part_size, f["size"] - start) for start in range(0, f["size"], part_size)]
            targets.append(
                {
                    "name": f["name"],
                    "role": f["role"],
                    "method": "PUT",
                    "url": None,
                    "headers": {},
                    "expiresAt": NOW,
                    "partSize": part_size,
                    "parts": [
                        {
                            "partNumber": n,
                            "url": f"{STORAGE}/{f['name']}/{n}",
                            "size": size,
                            "headers": {"x-part": str(n)},
                        }
                        for n, size in enumerate(sizes, start=1)
                    ],
                }
            )
        return targets

    service = MockService(multipart)
    service.fail("PUT /big.bin/2", 503)
    made = files(tmp_path, {"big.bin": 2_500_000})
    client_of(service, concurrency=3).upload(
        tmp_path, name="t", workload_metadata={"shape": {"rankCount": 1}}
    )
    parts = [service.stored[f"/big.bin/{n}"] for n in (1, 2, 3)]
    assert b"".join(parts) == made["big.bin"]
    assert [len(p) for p in parts] == [1_000_000, 1_000_000, 500_000]
    assert service.put_headers["/big.bin/3"]["x-part"] == "3"


def test_async_client_retries_alike(tmp_path: Path) -> None:
    service = MockService()
    service.fail("upload-url", 502, httpx.ConnectError)
    service.fail("PUT /a.bin", httpx.WriteError)
    made = files(tmp_path, {"a.bin": 2_000_000})

    async def scenario() -> None:
        async with AsyncClient(
            "http://service.test", "tok", transport=httpx.MockTransport(service), retry=NO_WAIT
        ) as client:
            await client.upload(tmp_path, name="t", workload_metadata={"shape": {"rankCount": 1}})

    asyncio.run(scenario())
    assert len(set(service.upload_url_keys())) == 1 and len(service.upload_url_keys()) == 3
    assert service.stored == {"/a.bin": made["a.bin"]}


class LosesFirstAnswer(httpx.BaseTransport):
    """Forwards to the real service, then loses the answer to the first upload-url."""

    def __init__(self) -> None:
        self.real = httpx.HTTPTransport()
        self.lost = 0

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = self.real.handle_request(request)
        if request.url.path.endswith("/upload-url") and self.lost == 0:
            response.read()
            response.close()
            self.lost += 1
            raise httpx.ReadError("connection reset before the answer arrived")
        return response


def test_a_lost_answer_does_not_make_a_second_traceset(
    server: ServerProcess, workspace_token: str, tmp_path: Path, make_client: MakeClient
) -> None:
    made = files(tmp_path, {"a.bin": 100})
    flaky = LosesFirstAnswer()
    with make_client(server.url, workspace_token, transport=flaky, retry=NO_WAIT) as client:
        traceset = client.upload(
            tmp_path, name="once", workload_metadata={"shape": {"rankCount": 1}}
        )
        assert flaky.lost == 1 and traceset.status == "ready"
        assert [t.id for t in client.list_tracesets()] == [traceset.id]
        assert traceset.files[0].sha256 == hashlib.sha256(made["a.bin"]).hexdigest()


def test_retry_after_and_backoff() -> None:
    assert retry_after(httpx.Response(429, headers={"Retry-After": "7"})) == 7
    assert (
        retry_after(httpx.Response(503, headers={"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}))
        == 0
    )
    assert retry_after(httpx.Response(503)) is None
    policy = RetryPolicy(backoff=1, max_delay=5)
    assert policy.delay(0, httpx.Response(429, headers={"Retry-After": "60"})) == 5
    assert all(0 <= policy.delay(n, httpx.ConnectError("x")) <= min(5, 2**n) for n in range(6))
    assert policy.retryable(httpx.Response(503)) and not policy.retryable(httpx.Response(400))
    assert not policy.retryable(ValueError("not a transport error"))
