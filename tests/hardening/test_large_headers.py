"""A request's line and headers are bounded: an endless header cannot stall the service.

The parser keeps a header it has not seen the end of, a copy longer than the last at
each read: unbounded, one header value streamed without end held ever more memory and
the event loop. The headers' timeout does not help (20 s is a long time on loopback):
these services wait two minutes for headers, so only the bound can end the attack.
"""

from __future__ import annotations

import json
import re
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.hardening.stall import answered, connect, read_answer
from tests.hardening.test_slow_clients import api_of, is_problem, start
from tests.server import ServerProcess
from tracesets.api.connections import MAX_HEAD_BYTES

#: What the endless header streams at most before the test gives up on the service.
ATTACK_BYTES = 64 * 1024 * 1024
CHUNK = 64 * 1024


@pytest.fixture(scope="module")
def patient(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    process = start(tmp_path_factory.mktemp("patient"), TRACESETS_HEADER_TIMEOUT="120")
    yield process
    process.stop()


def peak_memory(server: ServerProcess) -> int:
    """The serving process's peak resident memory (VmHWM), in bytes."""
    assert server.proc is not None
    for line in Path(f"/proc/{server.proc.pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM in /proc/PID/status")


def test_a_head_past_the_bound_is_answered_431(patient: ServerProcess) -> None:
    """One byte over, sent whole: the service reads it all, so its answer arrives."""
    start_line = b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Long: "
    with connect(patient.url) as sock:
        sock.sendall(start_line + b"a" * (MAX_HEAD_BYTES + 1 - len(start_line)))
        answer = is_problem(read_answer(sock), 431)
    assert answer.headers["connection"] == "close"
    assert re.fullmatch("[0-9a-f]{16}", answer.headers["x-request-id"])  # one of its own
    problem = json.loads(answer.body)
    assert problem["type"] == "urn:tracesets:problem:headers-too-large"
    assert problem["errors"][0]["member"] == "request"
    assert f"{MAX_HEAD_BYTES:,} bytes" in problem["detail"]


def test_a_head_within_the_bound_is_served(patient: ServerProcess) -> None:
    padding = b"X-Padding: " + b"a" * (MAX_HEAD_BYTES - 200) + b"\r\n"
    with connect(patient.url) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n" + padding + b"\r\n")
        answer = read_answer(sock)
    assert answer is not None and answer.status == 200, answer


def test_an_endless_header_value_is_cut_and_others_are_served(patient: ServerProcess) -> None:
    before = peak_memory(patient)
    with connect(patient.url) as sock, api_of(patient) as api:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Endless: " + b"a" * (CHUNK // 2))
        # Mid-attack, the header not ended and within the bound: others are served.
        assert api.get("/healthz").status_code == 200
        sent = stream_until_stopped(sock)
        assert sent < ATTACK_BYTES, f"the service took {sent:,} bytes of one header"
        answer = read_answer(sock)
        if answer is not None:  # the answer may be lost to the reset of what it left unread
            is_problem(answer, 431)
        assert api.get("/healthz").status_code == 200
    grown = peak_memory(patient) - before
    assert grown < 16 * 1024 * 1024, f"the service's peak memory grew by {grown:,} bytes"


def stream_until_stopped(sock: socket.socket) -> int:
    """Send the header's value until the service answers or closes; the bytes sent."""
    sent = 0
    while sent < ATTACK_BYTES and not answered(sock):
        try:
            sock.sendall(b"a" * CHUNK)
        except (BrokenPipeError, ConnectionResetError):
            break
        sent += CHUNK
    return sent
