"""An answer leaves its connection in one send: status line, headers and body together.

The service's protocol runs over a transport that records each send, on a real event
loop: no socket, so what is counted is what the protocol asked for, not how the kernel
happened to split or join it.
"""

from __future__ import annotations

import asyncio
from typing import Any

from starlette.types import Receive, Scope, Send
from uvicorn.config import Config
from uvicorn.server import ServerState

from tracesets.api.connections import COALESCE_LIMIT, GuardedHttpToolsProtocol


class RecordingTransport(asyncio.Transport):
    """Each ``write`` kept as one send; ``close`` recorded where it happened among them."""

    def __init__(self) -> None:
        super().__init__()
        self.sends: list[bytes] = []
        self.closed_after: int | None = None

    def write(self, data: bytes | bytearray | memoryview) -> None:
        assert self.closed_after is None, "written after it was closed"
        self.sends.append(bytes(data))

    def close(self) -> None:
        if self.closed_after is None:
            self.closed_after = len(self.sends)

    def is_closing(self) -> bool:
        return self.closed_after is not None

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"sockname": ("127.0.0.1", 8000), "peername": ("127.0.0.1", 50000)}.get(
            name, default
        )

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


def answer_of(size: int) -> Any:
    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        body = b"x" * size
        headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % size)]
        await send({"type": "http.response.start", "status": 201, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    return app


def protocol_for(app: Any) -> GuardedHttpToolsProtocol:
    """The service's protocol serving ``app`` on the running loop, not yet connected."""
    config = Config(app=app, log_level="warning", access_log=False, lifespan="off")
    config.load()
    return GuardedHttpToolsProtocol(config, ServerState(), {}, asyncio.get_running_loop())


async def served(app: Any, *requests: bytes) -> RecordingTransport:
    """What the protocol sent answering ``requests``, which arrive in one read, and
    whether it closed the connection, before the client goes."""
    protocol = protocol_for(app)
    transport = RecordingTransport()
    protocol.connection_made(transport)
    protocol.data_received(b"".join(requests))
    while protocol.tasks or protocol.pipeline:
        await asyncio.sleep(0)
    await asyncio.sleep(0)  # the loop's turn after the last answer's step: its send
    seen = RecordingTransport()
    seen.sends, seen.closed_after = list(transport.sends), transport.closed_after
    protocol.connection_lost(None)
    return seen


def request(path: str, *, close: bool = False) -> bytes:
    connection = b"Connection: close\r\n" if close else b""
    return b"GET " + path.encode() + b" HTTP/1.1\r\nHost: t\r\n" + connection + b"\r\n"


def test_a_small_answer_leaves_in_one_send() -> None:
    transport = asyncio.run(served(answer_of(300), request("/")))
    assert len(transport.sends) == 1
    head, _, body = transport.sends[0].partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 201 Created\r\n")
    assert b"content-length: 300" in head
    assert body == b"x" * 300
    assert transport.closed_after is None


def test_pipelined_answers_leave_whole_and_in_order() -> None:
    async def by_path(scope: Scope, receive: Receive, send: Send) -> None:
        body = scope["path"].encode()
        headers = [(b"content-length", b"%d" % len(body))]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    transport = asyncio.run(served(by_path, request("/first"), request("/second")))
    sent = b"".join(transport.sends)
    assert sent.count(b"HTTP/1.1 200 OK") == 2
    assert sent.index(b"/first") < sent.index(b"HTTP/1.1 200 OK", 1) < sent.index(b"/second")
    assert len(transport.sends) == 2  # one each


def test_an_answer_before_close_is_sent_whole_before_the_connection_closes() -> None:
    transport = asyncio.run(served(answer_of(300), request("/", close=True)))
    assert len(transport.sends) == 1
    assert transport.sends[0].endswith(b"x" * 300)
    assert transport.closed_after == 1


def test_a_large_body_is_not_held_and_keeps_its_order() -> None:
    size = 4 * COALESCE_LIMIT
    transport = asyncio.run(served(answer_of(size), request("/")))
    assert max(len(sent) for sent in transport.sends) <= size
    head, _, body = b"".join(transport.sends).partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 201 Created")
    assert body == b"x" * size
