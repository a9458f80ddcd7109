"""Once a traceset is complete its bytes never change, whatever an upload's timing.

Runs on the run's backend (local files, or S3) and on a service keeping files itself
(with the run's database). The race is driven by hand: the second upload's body is a
generator that sends its first chunk, then waits for the test's signal to send the
rest, so ``complete`` and ``promote`` happen while it is in flight, every time.
"""

from __future__ import annotations

import hashlib
import secrets
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import httpx
import pytest

from tests.flows import problems, put, request_urls, send
from tests.server import ServerProcess

SIZE = 4 * 1024 * 1024
CHUNK = 256 * 1024
#: Over the scaled run's multipart threshold (5 MiB): on S3, an upload in parts.
LARGE = 6 * 1024 * 1024


@pytest.fixture(params=["run's storage", "local files"])
def service(
    request: pytest.FixtureRequest, server: ServerProcess, local_server: ServerProcess
) -> ServerProcess:
    chosen: ServerProcess = server if request.param == "run's storage" else local_server
    return chosen


@pytest.fixture
def client(service: ServerProcess) -> Iterator[httpx.Client]:
    token = service.new_token("frozen-" + secrets.token_hex(6))
    with httpx.Client(
        base_url=service.url, headers={"Authorization": f"Bearer {token}"}, timeout=60
    ) as api:
        yield api


def through_service(service: ServerProcess, url: str) -> bool:
    """Whether the URL is the service's own (local files) rather than S3's."""
    return url.startswith(service.url)


def assert_refused_late(service: ServerProcess, url: str, answer: httpx.Response) -> None:
    """The service answers 409 with problem details; S3 refuses the conditional write."""
    if through_service(service, url):
        assert answer.status_code == 409, answer.text
        assert "complete" in problems(answer)[0]["message"]
    else:
        assert answer.status_code == 412, answer.text


def assert_holds(api: httpx.Client, traceset_id: str, name: str, data: bytes) -> None:
    got = api.get(f"/api/v1/tracesets/{traceset_id}").json()
    [file] = [f for f in got["files"] if f["name"] == name]
    assert file["sha256"] == hashlib.sha256(data).hexdigest()
    download = api.get(f"/api/v1/tracesets/{traceset_id}/files/{name}", follow_redirects=True)
    assert download.status_code == 200
    assert hashlib.sha256(download.content).digest() == hashlib.sha256(data).digest()


def assert_only_kept(service: ServerProcess, traceset_id: str, data: bytes) -> None:
    """With local files: the one file left is the acknowledged one; nothing else."""
    blobs = service.data_dir / "blobs" / traceset_id
    if blobs.exists():
        kept = sorted(path.name for path in blobs.iterdir())
        assert kept == [f"0.{hashlib.sha256(data).hexdigest()}"]
    assert not list((service.data_dir / "tmp").iterdir())


class SlowBody:
    """A request body sent in two steps: one chunk, then the rest when released."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.first_sent = threading.Event()
        self.release = threading.Event()

    def __iter__(self) -> Iterator[bytes]:
        yield self.data[:CHUNK]
        self.first_sent.set()
        assert self.release.wait(60), "the test never released the body"
        for start in range(CHUNK, len(self.data), CHUNK):
            yield self.data[start : start + CHUNK]


def wait_until_receiving(service: ServerProcess, target: dict[str, Any], body: SlowBody) -> None:
    """Until the upload is under way: with local files, until the service has checked the
    traceset and opened the upload's temporary file."""
    assert body.first_sent.wait(60)
    if through_service(service, target["url"]):
        tmp, poll = service.data_dir / "tmp", threading.Event()
        for _ in range(6000):
            if any(tmp.iterdir()):
                return
            poll.wait(0.01)
        raise AssertionError("the service never began receiving the upload")


def test_upload_in_flight_during_complete_changes_nothing(
    service: ServerProcess, client: httpx.Client
) -> None:
    first, second = secrets.token_bytes(SIZE), secrets.token_bytes(SIZE)
    created = request_urls(client, {"rank0.json": first}, with_sha=False)
    traceset_id = created["tracesetId"]
    [target] = created["uploads"]
    send(target, first)

    body = SlowBody(second)
    headers = {**target["headers"], "Content-Length": str(SIZE)}
    with ThreadPoolExecutor(1) as pool:
        late = pool.submit(
            httpx.put, target["url"], content=iter(body), headers=headers, timeout=120
        )
        try:
            wait_until_receiving(service, target, body)
            done = client.post(f"/api/v1/tracesets/{traceset_id}/complete")
            assert done.status_code == 200, done.text
            assert done.json()["status"] == "ready"
            assert done.json()["files"][0]["sha256"] == hashlib.sha256(first).hexdigest()
            promoted = client.post(f"/api/v1/tracesets/{traceset_id}/promote", json={})
            assert promoted.status_code == 200, promoted.text
        finally:
            body.release.set()
        answer = late.result()
    assert_refused_late(service, target["url"], answer)
    assert_holds(client, traceset_id, "rank0.json", first)
    if through_service(service, target["url"]):
        assert_only_kept(service, traceset_id, first)


@pytest.mark.parametrize("size", [SIZE, LARGE], ids=["single PUT", "large"])
def test_upload_after_promotion_changes_nothing(
    service: ServerProcess, client: httpx.Client, size: int
) -> None:
    original, other = secrets.token_bytes(size), secrets.token_bytes(size)
    created = request_urls(client, {"rank0.json": original}, with_sha=False)
    traceset_id = created["tracesetId"]
    [target] = created["uploads"]
    send(target, original)
    assert client.post(f"/api/v1/tracesets/{traceset_id}/complete").status_code == 200
    assert client.post(f"/api/v1/tracesets/{traceset_id}/promote", json={}).status_code == 200

    if target.get("parts"):
        # S3 multipart: the upload was joined at complete; its part URLs are dead (S3
        # answers 404 NoSuchUpload; moto, the test pass's S3, fails on the unknown id).
        for part in target["parts"]:
            start = (part["partNumber"] - 1) * target["partSize"]
            answer = put(part["url"], other[start : start + part["size"]], part["headers"])
            assert not answer.is_success, answer.text
    else:
        if not through_service(service, target["url"]):
            # S3 checks the signature: the condition cannot be left out of the request.
            signed = parse_qs(urlparse(target["url"]).query)["X-Amz-SignedHeaders"][0]
            assert "if-none-match" in signed.split(";")
            assert target["headers"]["If-None-Match"] == "*"
        answer = put(target["url"], other, target["headers"])
        assert_refused_late(service, target["url"], answer)
        assert put(target["url"], original, target["headers"]).status_code in (200, 412)
    assert_holds(client, traceset_id, "rank0.json", original)
    if through_service(service, target.get("url") or ""):
        assert_only_kept(service, traceset_id, original)


def test_pending_file_can_be_replaced_until_complete(
    service: ServerProcess, client: httpx.Client
) -> None:
    """Before complete, local files take new bytes (the last upload counts); S3 keeps the
    first (a conditional write), and the retried PUT's 412 is what clients take as 'there'."""
    first, second = secrets.token_bytes(1000), secrets.token_bytes(1000)
    created = request_urls(client, {"rank0.json": first}, with_sha=False)
    traceset_id = created["tracesetId"]
    [target] = created["uploads"]
    send(target, first)
    again = put(target["url"], second, target["headers"])
    expected = second if through_service(service, target["url"]) else first
    assert again.status_code == (200 if expected is second else 412), again.text
    assert client.post(f"/api/v1/tracesets/{traceset_id}/complete").status_code == 200
    assert_holds(client, traceset_id, "rank0.json", expected)
    if through_service(service, target["url"]):
        assert_only_kept(service, traceset_id, expected)


def scoped(service: ServerProcess, workspace: str, *scopes: str) -> httpx.Client:
    args = ["token", "create", "--workspace", workspace, "--data-dir", str(service.data_dir)]
    for scope in scopes:
        args += ["--scope", scope]
    done = service.cli(*args)
    assert done.returncode == 0, done.stderr
    return httpx.Client(
        base_url=service.url,
        headers={"Authorization": f"Bearer {done.stdout.strip()}"},
        timeout=60,
    )


def test_upload_urls_go_only_to_write_tokens(server: ServerProcess, tmp_path: Path) -> None:
    workspace = "scopes-" + secrets.token_hex(6)
    arrived, missing = secrets.token_bytes(100), secrets.token_bytes(200)
    with (
        scoped(server, workspace, "read", "write") as writer,
        scoped(server, workspace, "read") as reader,
    ):
        created = request_urls(writer, {"a.json": arrived, "b.json": missing})
        traceset_id = created["tracesetId"]
        send(next(t for t in created["uploads"] if t["name"] == "a.json"), arrived)

        seen = reader.get(f"/api/v1/tracesets/{traceset_id}/uploads")
        assert seen.status_code == 200, seen.text
        assert seen.json()["received"] == ["a.json"]
        assert seen.json()["uploads"] == [], "a read token gets no upload URL"

        written = writer.get(f"/api/v1/tracesets/{traceset_id}/uploads")
        assert written.status_code == 200, written.text
        assert written.json()["received"] == ["a.json"]
        [target] = written.json()["uploads"]
        assert target["name"] == "b.json" and (target.get("url") or target.get("parts"))
        send(target, missing)
        assert writer.post(f"/api/v1/tracesets/{traceset_id}/complete").status_code == 200
