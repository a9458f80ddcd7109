"""Slow, stalled and too many clients cannot exhaust the service.

Headers that trickle in are cut; a body that stops moving is answered 408 and leaves
nothing behind; uploads past the bound, and requests past what the open-file limit
allows, get 503 with Retry-After (never a 500); temporary files of uploads that died
are swept while the service runs. The signed PUT URLs are the service's own, so these
services keep files locally whatever the run's database.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import resource
import secrets
import signal
import socket
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import httpx
import pytest

from tests.flows import RANKS_8, request_urls, send
from tests.hardening.stall import (
    PATIENCE,
    Answer,
    answered,
    closed_without_answer,
    connect,
    head,
    read_answer,
    stalled,
)
from tests.server import ServerProcess
from tracesets.api.connections import connection_budget
from tracesets.problems import ServiceUnavailable
from tracesets.storage.local import LocalBlobStore
from tracesets.storage.signing import URLSigner


def wait_for(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + PATIENCE
    while not condition():
        assert time.monotonic() < deadline, f"still waiting for {what}"
        time.sleep(0.05)


def start(tmp: Path, files_limit: int | None = None, **env: str) -> ServerProcess:
    process = ServerProcess(tmp, extra_env=env, local_files=True, files_limit=files_limit)
    process.start()
    return process


def api_of(server: ServerProcess) -> httpx.Client:
    return httpx.Client(
        base_url=server.url, headers={"Authorization": f"Bearer {server.token}"}, timeout=60
    )


def temporary_files(server: ServerProcess) -> list[Path]:
    return sorted((server.data_dir / "tmp").iterdir())


def put_urls(server: ServerProcess, count: int, size: int = 1000) -> tuple[str, list[str]]:
    """A pending traceset of ``count`` files of ``size`` bytes, and their PUT URLs."""
    files = {f"rank{i}.json": secrets.token_bytes(size) for i in range(count)}
    with api_of(server) as api:
        created = request_urls(api, files, RANKS_8)
    return created["tracesetId"], [target["url"] for target in created["uploads"]]


def is_problem(answer: Answer | None, status: int) -> Answer:
    assert answer is not None, "the connection closed without an answer"
    assert answer.status == status, answer
    assert answer.headers["content-type"] == "application/problem+json", answer
    return answer


@pytest.fixture(scope="module")
def impatient(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """Short timeouts, so a test sees them act; the body's pace at its least (a byte a
    second), so a body that sent a little, then stops, is cut for the pause alone."""
    process = start(
        tmp_path_factory.mktemp("impatient"),
        TRACESETS_HEADER_TIMEOUT="1",
        TRACESETS_BODY_IDLE_TIMEOUT="1",
        TRACESETS_MIN_BODY_RATE="1",
    )
    yield process
    process.stop()


def test_headers_sent_a_byte_at_a_time_are_cut(impatient: ServerProcess) -> None:
    sock = connect(impatient.url)
    request = head("GET", f"{impatient.url}/healthz", 0, "text/plain")
    # 300 bytes at most 0.2 s apart: the service has a minute to cut them, not one second.
    request = request.removesuffix(b"\r\n") + b"X-Padding: " + b"x" * 200 + b"\r\n\r\n"
    with sock:
        for byte in request:
            try:
                sock.sendall(bytes([byte]))
            except (BrokenPipeError, ConnectionResetError):
                break
            if answered(sock, wait=0.2):
                assert closed_without_answer(sock)
                break
        else:
            pytest.fail("every header byte was taken: the headers were never cut")


def test_a_connection_that_sends_nothing_is_closed(impatient: ServerProcess) -> None:
    with connect(impatient.url) as sock:
        assert closed_without_answer(sock)


@pytest.mark.parametrize("sent", [b"", b"x" * 400], ids=["no body", "part of the body"])
def test_a_stalled_upload_is_cut_and_leaves_nothing(impatient: ServerProcess, sent: bytes) -> None:
    traceset_id, [url] = put_urls(impatient, 1)
    with stalled("PUT", url, length=1000, sent=sent) as sock:
        answer = is_problem(read_answer(sock), 408)
        assert answer.headers["connection"] == "close"
        assert "sent nothing" in answer.body.decode()
        assert closed_without_answer(sock)
    assert temporary_files(impatient) == []
    with api_of(impatient) as api:
        status = api.get(f"/api/v1/tracesets/{traceset_id}/uploads").json()
    assert status["received"] == [], status


def test_a_stalled_json_body_is_cut(impatient: ServerProcess) -> None:
    with stalled(
        "POST",
        f"{impatient.url}/api/v1/tracesets/upload-url",
        length=100,
        sent=b'{"name": ',
        content_type="application/json",
        headers={"Authorization": f"Bearer {impatient.token}"},
    ) as sock:
        is_problem(read_answer(sock), 408)


def test_a_dead_uploads_temporary_file_is_swept_while_the_service_runs(
    tmp_path: Path,
) -> None:
    server = start(tmp_path, TRACESETS_BODY_IDLE_TIMEOUT="60")
    try:
        _, [url] = put_urls(server, 1, size=100_000)
        with stalled("PUT", url, length=100_000, sent=b"x" * 1000):
            wait_for(lambda: len(temporary_files(server)) == 1, "the upload's temporary file")
            [leftover] = temporary_files(server)
            server.stop(signal.SIGKILL)
        assert leftover.exists()
        server.env["TRACESETS_BODY_IDLE_TIMEOUT"] = "1"  # a leftover is old after 2 s
        server.start()
        wait_for(lambda: not leftover.exists(), "the sweep of the dead upload's file")
    finally:
        server.stop()


def test_the_sweep_spares_a_live_uploads_file(impatient: ServerProcess) -> None:
    """A file locked by a live upload (here, of this process) stays, however old."""
    tmp = impatient.data_dir / "tmp"
    live, dead = tmp / "live.part", tmp / "dead.part"
    fd = os.open(live, os.O_WRONLY | os.O_CREAT, 0o640)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        dead.write_bytes(b"left by a crash")
        for path in (live, dead):
            os.utime(path, (time.time() - 3600, time.time() - 3600))
        wait_for(lambda: not dead.exists(), "the sweep of the unlocked file")
        assert live.exists()
    finally:
        os.close(fd)
    wait_for(lambda: not live.exists(), "the sweep of the file once unlocked")


def test_uploads_past_the_bound_get_503_with_retry_after(tmp_path: Path) -> None:
    """Past the bound an upload waits for a slot; none frees within the wait: 503. (The
    uploads holding the slots are of two tracesets: one may hold only half of them.)"""
    server = start(tmp_path, TRACESETS_MAX_CONCURRENT_UPLOADS="2", TRACESETS_UPLOAD_WAIT="1")
    try:
        _, urls = put_urls(server, 4)
        _, [other] = put_urls(server, 1)
        holders = []
        for url in (urls[0], other):
            holders.append(stalled("PUT", url, length=1000, sent=b"x"))
            wait_for(lambda: len(temporary_files(server)) == len(holders), "an upload in progress")
        refused = httpx.put(urls[2], content=b"x" * 1000, timeout=60)
        assert refused.status_code == 503, refused.text
        assert refused.headers["content-type"] == "application/problem+json"
        assert refused.headers["retry-after"] == "1"  # the wait, in whole seconds
        assert "2 uploads at once" in refused.json()["detail"]
        assert "none ended within 1 seconds" in refused.json()["detail"]
        for sock in holders:
            sock.close()
        wait_for(lambda: temporary_files(server) == [], "the abandoned uploads' files to go")
        data = secrets.token_bytes(1000)
        with api_of(server) as api:
            created = request_urls(api, {"a.json": data}, RANKS_8)
        send(created["uploads"][0], data)  # a slot is free again
    finally:
        server.stop()


def test_running_out_of_descriptors_gives_503_never_500(tmp_path: Path) -> None:
    """With 256 open files, stalled uploads and idle connections far past what it can
    hold get 503 or a closed connection; the service keeps serving once they go."""
    server = start(tmp_path, files_limit=256, TRACESETS_HEADER_TIMEOUT="120")
    held: list[socket.socket] = []
    try:
        _, urls = put_urls(server, 60)
        answers: list[Answer | None] = []
        for url in urls:
            sock = stalled("PUT", url, length=1000, sent=b"x")
            held.append(sock)
            uploads = len(held) - len(answers)
            wait_for(
                lambda sock=sock, uploads=uploads: (  # type: ignore[misc]
                    len(temporary_files(server)) == uploads or answered(sock)
                ),
                "the upload to start or be refused",
            )
            if answered(sock):
                answers.append(read_answer(sock))
        assert answers, "every stalled upload was taken: the bound was never reached"
        for answer in answers:
            refused = is_problem(answer, 503)
            assert refused.headers["retry-after"].isdigit()
        for _ in range(400):  # more than the service's open-file limit
            held.append(connect(server.url))
        for _ in range(20):
            try:
                late = httpx.put(urls[-1], content=b"x" * 1000, timeout=60)
            except httpx.TransportError:  # closed at once: past what the service holds
                continue
            assert late.status_code == 503, late.text
        for sock in held:
            sock.close()
        held.clear()
        wait_for(lambda: temporary_files(server) == [], "the abandoned uploads' files to go")
        data = secrets.token_bytes(1000)
        with api_of(server) as api:
            wait_for(lambda: api.get("/healthz").status_code == 200, "the service to serve")
            created = request_urls(api, {"a.json": data}, RANKS_8)
        send(created["uploads"][0], data)
        log = server.log.read_text()
        assert "Too many open files" not in log
        assert "Exception in ASGI application" not in log
    finally:
        for sock in held:
            sock.close()
        server.stop()


def test_an_upload_out_of_descriptors_is_refused_503(tmp_path: Path) -> None:
    """The store itself, in this process, with every descriptor taken: 503, nothing left."""
    store = LocalBlobStore(tmp_path, URLSigner(secrets.token_bytes(32)))

    async def chunks() -> AsyncIterator[bytes]:
        yield b"abc"

    async def attempt() -> None:
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        taken: list[int] = []
        resource.setrlimit(resource.RLIMIT_NOFILE, (len(os.listdir("/proc/self/fd")) + 16, hard))
        try:
            with contextlib.suppress(OSError):
                while True:
                    taken.append(os.open(os.devnull, os.O_RDONLY))
            with pytest.raises(ServiceUnavailable) as refused:
                await store.receiver.receive("t/0", chunks(), size=3, sha256=None)
        finally:
            for fd in taken:
                os.close(fd)
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
        assert refused.value.retry_after > 0
        assert "too many files open" in refused.value.detail

    asyncio.run(attempt())
    assert list((tmp_path / "tmp").iterdir()) == []
    assert [p for p in (tmp_path / "blobs").rglob("*") if p.is_file()] == []


def test_probes_and_metrics_are_answered_when_every_request_slot_is_taken(
    tmp_path: Path,
) -> None:
    """A busy service is alive: with every request slot held by stalled bodies, the
    health probes and the metrics still answer 200, while the API answers 503, each
    refusal with its request id and counted in the metrics."""
    server = start(
        tmp_path, files_limit=256, TRACESETS_HEADER_TIMEOUT="120", TRACESETS_BODY_IDLE_TIMEOUT="120"
    )
    held: list[socket.socket] = []
    try:
        url = f"{server.url}/api/v1/tracesets/upload-url"
        auth = {"Authorization": f"Bearer {server.token}"}
        for _ in range(connection_budget(256) + 8):  # more stalled bodies than slots
            held.append(stalled("POST", url, length=100, sent=b"{", headers=auth,
                                content_type="application/json"))  # fmt: skip
        wait_for(lambda: any(answered(sock) for sock in held), "a request to be refused")
        refused = read_answer(next(sock for sock in held if answered(sock)))
        assert is_problem(refused, 503).headers["x-request-id"]
        with httpx.Client(base_url=server.url, timeout=60) as client:
            for path in ("/livez", "/readyz", "/healthz", "/metrics"):
                assert client.get(path).status_code == 200, path
            busy = client.get("/api/v1/tracesets", headers={**auth, "X-Request-ID": "busy-1"})
            assert busy.status_code == 503, busy.text
            assert busy.headers["retry-after"].isdigit()
            assert busy.headers["x-request-id"] == "busy-1"  # observed like any answer
            # counted (unrouted: under ``busy``), so an operator can alert on them
            counted = [
                line
                for line in client.get("/metrics").text.splitlines()
                if line.startswith("tracesets_http_requests_total{")
                and 'route="busy"' in line
                and 'status="503"' in line
            ]
        assert counted and float(counted[0].rsplit(" ", 1)[1]) >= 2, counted
    finally:
        for sock in held:
            sock.close()
        server.stop()
