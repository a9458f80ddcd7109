"""A request the HTTP parser refuses gets problem details, as every other refusal does.

The fuzz found it: a Content-Length that is not a number is refused by the server's
parser before the app sees the request, and uvicorn answered in plain text, which the
description documents nowhere.
"""

from __future__ import annotations

import json
import re

import httpx
import pytest

from tests.hardening.stall import Answer, connect, read_answer
from tests.server import ServerProcess


@pytest.mark.parametrize(
    "request_head",
    [
        b"GET /api/v1/whoami HTTP/1.1\r\nHost: x\r\nX-Request-ID: mine-1\r\n"
        b"Content-Length: P^_\r\n\r\n",
        b"GET /api/v1/whoami HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
        b"GET /api/v1/who ami HTTP/1.1\r\nHost: x\r\n\r\n",
        b"GET /api/v1/whoami HTTP/1.1\r\nHost x\r\n\r\n",
        # headers whole, then the framing refused: the app had begun (the fuzz found it)
        b"GET /api/v1/whoami HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: 0\r\n\r\n",
        # any route: one that refuses nothing else of a GET (the fuzz found it, once in runs)
        b"GET /api/v1/tracesets/%C2%A0%C3%B5 HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: ?9\r\n\r\n",
    ],
    ids=[
        "content-length not a number",
        "two content-lengths",
        "space in target",
        "no colon",
        "transfer-encoding not chunked",
        "transfer-encoding on a traceset",
    ],
)
def test_a_request_the_parser_refuses_is_answered_with_problem_details(
    hardening_server: ServerProcess, request_head: bytes
) -> None:
    before = counted(hardening_server)
    answer = exchange(hardening_server, request_head)
    assert answer.status == 400, answer
    assert answer.headers["content-type"] == "application/problem+json"
    assert answer.headers["connection"] == "close"
    problem = json.loads(answer.body)
    assert problem["status"] == 400
    assert problem["errors"][0]["member"] == "request"
    assert "not valid HTTP/1.1" in problem["detail"]
    # counted, and given a request id (the client's, when its header was read)
    rid = answer.headers["x-request-id"]
    assert rid == "mine-1" if b"mine-1" in request_head else re.fullmatch("[0-9a-f]{16}", rid)
    # once, as refused before it was read whole (not also as its route's answer, dropped)
    after = counted(hardening_server)
    grown = {route: n - before.get(route, 0) for route, n in after.items()}
    assert {route: n for route, n in grown.items() if n} == {"unread": 1}


def exchange(server: ServerProcess, request: bytes) -> Answer:
    """The answer to ``request``, sent as is on a connection of its own."""
    with connect(server.url) as sock:
        sock.sendall(request)
        answer = read_answer(sock)
    assert answer is not None, "closed without an answer"
    return answer


def counted(server: ServerProcess) -> dict[str, float]:
    """The requests the metrics count, by route, but the scrapes of the metrics."""
    lines = httpx.get(f"{server.url}/metrics", timeout=60).text.splitlines()
    by_route: dict[str, float] = {}
    for line in lines:
        if line.startswith("tracesets_http_requests_total{"):
            route = line.split('route="', 1)[1].split('"', 1)[0]
            if route != "/metrics":
                by_route[route] = by_route.get(route, 0) + float(line.rsplit(" ", 1)[1])
    return by_route


@pytest.mark.parametrize(
    "upgrade",
    [
        b"Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
        b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n",
        b"Upgrade: h2c\r\nConnection: Upgrade, HTTP2-Settings\r\nHTTP2-Settings: AAMAAABk\r\n",
    ],
    ids=["websocket", "h2c"],
)
def test_an_upgrade_is_asked_of_an_ordinary_request(
    hardening_server: ServerProcess, upgrade: bytes
) -> None:
    """No route is a WebSocket: the request is answered as any other, with problem
    details without a token (not a plain-text 403 from a WebSocket handshake)."""
    answer = exchange(
        hardening_server, b"GET /api/v1/whoami HTTP/1.1\r\nHost: x\r\n" + upgrade + b"\r\n"
    )
    assert answer.status == 401, answer
    assert answer.headers["content-type"] == "application/problem+json"
