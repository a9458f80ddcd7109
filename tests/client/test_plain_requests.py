"""A download from a plain http:// service, and the API's requests without a query, go on
``http.client``'s kept connections, and fail, retry and check as through httpx.

A small HTTP server on loopback plays the service and its store: a file's route answers
307 to the file's signed URL, which answers the bytes, or as its script says: 503, the
body cut short with the connection closed, or 404 with problem details. add-files
answers as its script says too (503, then 201, gzipped), and keeps the bodies it was sent.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.client.loopback import LoopbackServer
from tracesets import Client, ClientError, RetryPolicy

SIZE = 3 * 1024 * 1024 + 17  # more than one read block
FILES = {f"rank{index}.bin": bytes([index + 1]) * SIZE for index in range(3)}


class Service(LoopbackServer):
    """Answers a file's route with a redirect, and its signed URL by ``script`` (then the
    bytes for ever); counts the connections and the requests of each kind."""

    def __init__(self, script: list[str]) -> None:
        self.script = script
        self.redirects = 0
        self.reads = 0
        self.headers: list[dict[str, str]] = []
        self.bodies: list[bytes] = []
        super().__init__()
        self.url = f"http://127.0.0.1:{self.port}"

    def _serve(self, peer: socket.socket) -> None:
        with peer, peer.makefile("rb") as reading:
            while line := reading.readline():
                target = line.split()[1].decode()
                headers = {}
                while (header := reading.readline()) not in (b"\r\n", b""):
                    name, _, value = header.decode().partition(":")
                    headers[name.strip().lower()] = value.strip()
                body = reading.read(int(headers.get("content-length", 0)))
                with self.lock:
                    self.headers.append(headers)
                    self.bodies.append(body)
                if not self._answer(peer, target):
                    return

    def _answer(self, peer: socket.socket, target: str) -> bool:
        """Answer one request; ``False`` once the connection is closed."""
        name = target.split("?", maxsplit=1)[0].rsplit("/", 1)[-1]
        if target.endswith("/t/files"):  # add-files
            with self.lock:
                action = self.script.pop(0) if self.script else "ok"
            answer = gzip.compress(b'{"tracesetId": "t", "uploads": []}')
            status = b"503 Busy\r\nRetry-After: 0" if action == "503" else b"201 Created"
            peer.sendall(
                b"HTTP/1.1 "
                + status
                + b"\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\n"
                + f"Content-Length: {len(answer)}\r\n\r\n".encode()
                + answer
            )
            return True
        if "/api/v1/tracesets/" in target:
            with self.lock:
                self.redirects += 1
            where = f"{self.url}/store/{name}?signature={'s' * 200}"
            peer.sendall(
                f"HTTP/1.1 307 Temporary Redirect\r\nLocation: {where}\r\n"
                "Content-Length: 0\r\n\r\n".encode()
            )
            return True
        with self.lock:
            self.reads += 1
            action = self.script.pop(0) if self.script else "ok"
        body = FILES[name]
        if action == "503":
            peer.sendall(b"HTTP/1.1 503 Busy\r\nRetry-After: 0\r\nContent-Length: 0\r\n\r\n")
            return True
        if action == "404":
            problem = json.dumps({"title": "Not Found", "status": 404, "detail": "no such file"})
            peer.sendall(
                b"HTTP/1.1 404 Not Found\r\nContent-Type: application/problem+json\r\n"
                + f"Content-Length: {len(problem)}\r\n\r\n{problem}".encode()
            )
            return True
        peer.sendall(f"HTTP/1.1 200 OK\r\nContent-Length: {len(body)}\r\n\r\n".encode())
        if action == "cut":
            peer.sendall(body[: len(body) // 2])
            peer.shutdown(socket.SHUT_RDWR)
            return False
        peer.sendall(body)
        return True


@pytest.fixture
def service_of() -> Iterator[list[Service]]:
    made: list[Service] = []
    yield made
    for service in made:
        service.close()


def started(service_of: list[Service], script: list[str]) -> Service:
    service = Service(script)
    service_of.append(service)
    return service


def client(service: Service) -> Client:
    made = Client(service.url, "a-token", concurrency=1, retry=RetryPolicy(retries=2, backoff=0))
    assert made._plain is not None
    return made


def fetch(service: Service, name: str, dest: Path) -> Path:
    expected = hashlib.sha256(FILES[name]).hexdigest()
    with client(service) as fetching:
        return fetching.download("t", name, dest, sha256=expected)


def test_files_one_after_another_arrive_whole_on_one_kept_connection(
    tmp_path: Path, service_of: list[Service]
) -> None:
    service = started(service_of, [])
    with client(service) as fetching:
        for name, data in FILES.items():
            got = fetching.download("t", name, tmp_path, sha256=hashlib.sha256(data).hexdigest())
            assert got == tmp_path / name and got.read_bytes() == data
    assert service.redirects == service.reads == 3
    assert service.connections == 1
    api, store = service.headers[0], service.headers[1]
    assert api["authorization"] == "Bearer a-token"
    assert "authorization" not in store  # a signed URL carries its own permission
    assert api["user-agent"].startswith("tracesets-python/")
    assert [p.name for p in tmp_path.iterdir()] and not list(tmp_path.glob(".*.part"))


@pytest.mark.parametrize("fault", ["503", "cut"])
def test_a_failed_read_is_fetched_again_and_nothing_half_written_stays(
    fault: str, tmp_path: Path, service_of: list[Service]
) -> None:
    service = started(service_of, [fault])
    got = fetch(service, "rank1.bin", tmp_path)
    assert got.read_bytes() == FILES["rank1.bin"]
    assert service.reads == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rank1.bin"]


def test_reads_cut_every_time_end_in_a_clear_error_and_no_file(
    tmp_path: Path, service_of: list[Service]
) -> None:
    service = started(service_of, ["cut"] * 3)
    with pytest.raises(ClientError, match=r"download rank0\.bin: no answer"):
        fetch(service, "rank0.bin", tmp_path)
    assert service.reads == 3  # the first try and two retries
    assert list(tmp_path.iterdir()) == []


def test_a_refusal_is_the_stores_problem_details(tmp_path: Path, service_of: list[Service]) -> None:
    service = started(service_of, ["404"])
    with pytest.raises(ClientError) as refused:
        fetch(service, "rank2.bin", tmp_path)
    assert refused.value.status == 404
    assert "no such file" in str(refused.value)
    assert list(tmp_path.iterdir()) == []


def test_a_request_with_a_body_goes_whole_and_is_sent_again_after_a_503(
    service_of: list[Service],
) -> None:
    service = started(service_of, ["503"])
    entry = {"name": "rank9.bin", "size": 5, "role": "primary", "sha256": "a" * 64}
    with client(service) as adding:
        answer = adding.add_files("t", [entry])
        assert answer.tracesetId == "t" and answer.uploads == []
        assert adding._http._transport._plain is None  # type: ignore[attr-defined]
    assert len(service.bodies) == 2 and service.bodies[0] == service.bodies[1]
    assert json.loads(service.bodies[1]) == {"files": [entry]}
    sent = service.headers[1]
    assert sent["accept-encoding"] == "gzip, deflate"  # as httpx's; the answer came gzipped
    assert sent["content-type"] == "application/json"
    assert sent["content-length"] == str(len(service.bodies[1]))
    assert service.connections == 1
