"""PUTs to http:// URLs go by ``sendfile`` on kept-alive connections, and fail, retry and
resume as the PUTs through httpx do.

A small HTTP server on loopback plays the store: it takes each PUT's body, records it,
and answers as its script says: 200, 503, the connection cut half-way through the body,
or a 403 sent before the body is read (a refusal) and the connection closed.
"""

from __future__ import annotations

import hashlib
import socket
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest

from tests.client.loopback import LoopbackServer
from tracesets import Client, ClientError, RetryPolicy
from tracesets.client.files import LocalFile
from tracesets.client.models import UploadTarget

SIZE = 3 * 1024 * 1024 + 17  # more than one sendfile block


class Store(LoopbackServer):
    """Answers PUTs by ``script`` (then 200 for ever), keeps the whole bodies received."""

    def __init__(self, script: list[str]) -> None:
        self.script = script
        self.bodies: list[bytes] = []
        super().__init__()

    def _serve(self, peer: socket.socket) -> None:
        with peer, peer.makefile("rb") as reading:
            while True:
                line = reading.readline()
                if not line:
                    return
                length = 0
                while (header := reading.readline()) not in (b"\r\n", b""):
                    name, _, value = header.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value)
                with self.lock:
                    action = self.script.pop(0) if self.script else "ok"
                if action == "refuse":
                    peer.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 7\r\n\r\nexpired")
                    peer.shutdown(socket.SHUT_RDWR)
                    return
                if action == "cut":
                    reading.read(length // 2)
                    return
                body = reading.read(length)
                if len(body) < length:  # the client closed mid-body: nothing arrived whole
                    return
                if action == "503":
                    peer.sendall(b"HTTP/1.1 503 Busy\r\nContent-Length: 0\r\n\r\n")
                    continue
                with self.lock:
                    self.bodies.append(body)
                peer.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.port}/store/{name}?signature=x"


@pytest.fixture
def files(tmp_path: Path) -> list[LocalFile]:
    made = []
    for index in range(3):
        path = tmp_path / f"rank{index}.bin"
        data = bytes([index]) * SIZE
        path.write_bytes(data)
        digest = hashlib.sha256(data).hexdigest()
        made.append(LocalFile(path, path.name, SIZE, "primary", digest))
    return made


def targets_of(store: Store, files: list[LocalFile]) -> list[UploadTarget]:
    return [
        UploadTarget(
            name=f.name,
            role="primary",
            method="PUT",
            url=store.url(f.name),
            headers={"If-None-Match": "*"},
            expiresAt=datetime.now(UTC),
        )
        for f in files
    ]


def client() -> Client:
    made = Client(
        "http://127.0.0.1:1", "a-token", concurrency=1, retry=RetryPolicy(retries=2, backoff=0)
    )
    assert made._plain is not None
    return made


def send(store: Store, files: list[LocalFile], moves: list[tuple[int, int]]) -> None:
    with client() as sending:
        sending.send_uploads(
            "t", files, targets_of(store, files), lambda done, total: moves.append((done, total))
        )


@pytest.fixture
def store_of() -> Iterator[list[Store]]:
    made: list[Store] = []
    yield made
    for store in made:
        store.close()


def test_every_byte_arrives_on_one_kept_connection(
    files: list[LocalFile], store_of: list[Store]
) -> None:
    store = Store([])
    store_of.append(store)
    moves: list[tuple[int, int]] = []
    send(store, files, moves)
    assert sorted(store.bodies) == sorted(f.path.read_bytes() for f in files)
    assert store.connections == 1
    assert moves[-1] == (3 * SIZE, 3 * SIZE)


def test_uploads_one_after_another_reuse_the_connection(
    files: list[LocalFile], store_of: list[Store]
) -> None:
    store = Store([])
    store_of.append(store)
    with client() as sending:  # each upload sends on threads of its own
        sending.send_uploads("t", files[:1], targets_of(store, files[:1]))
        sending.send_uploads("t", files[1:], targets_of(store, files[1:]))
    assert len(store.bodies) == 3
    assert store.connections == 1


@pytest.mark.parametrize("fault", ["503", "cut"])
def test_a_failed_try_is_sent_again_and_its_bytes_given_back(
    fault: str, files: list[LocalFile], store_of: list[Store]
) -> None:
    store = Store([fault])
    store_of.append(store)
    moves: list[tuple[int, int]] = []
    send(store, files[:1], moves)
    assert store.bodies == [files[0].path.read_bytes()]
    assert max(done for done, _ in moves) == SIZE  # never counted twice
    assert moves[-1] == (SIZE, SIZE)


def test_a_refusal_before_the_body_is_read_is_the_stores_answer(
    files: list[LocalFile], store_of: list[Store]
) -> None:
    store = Store(["refuse"])
    store_of.append(store)
    with pytest.raises(ClientError) as refused:
        send(store, files[:1], [])
    assert refused.value.status == 403
    assert "PUT rank0.bin" in str(refused.value)


def test_a_file_that_became_shorter_is_not_sent_as_whole(
    files: list[LocalFile], store_of: list[Store]
) -> None:
    store = Store([])
    store_of.append(store)
    files[0].path.write_bytes(b"short")
    with pytest.raises(ClientError, match="became shorter"):
        send(store, files[:1], [])
    assert store.bodies == []


def answered(request: httpx.Request) -> httpx.Response:
    return httpx.Response(200)


def test_with_a_proxy_set_puts_go_through_httpx(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("http_proxy", "http://127.0.0.1:3128")
    with Client("http://127.0.0.1:1", "a-token") as proxied:
        assert proxied._plain is None
    with Client("http://127.0.0.1:1", "a-token", transport=httpx.MockTransport(answered)) as mocked:
        assert mocked._plain is None
