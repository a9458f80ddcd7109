"""A body that came whole is read without the idle timer; one still arriving is timed.

The service's protocol marks each request's ``BodyArrival`` when its last byte is in;
``IdleBodyTimeout`` arms its timer only for a body that has not.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from starlette.types import Message, Receive, Scope, Send

from tests.api.test_coalesced_writes import RecordingTransport, protocol_for
from tracesets.api.guards import BODY_ARRIVAL, BodyArrival, IdleBodyTimeout
from tracesets.problems import RequestTimeout

REQUEST = b"POST /x HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\n"


async def arrivals_seen(*reads: bytes) -> list[bool]:
    """Whether the app found the body whole when it started, and once it had read it,
    for a request that arrives in ``reads``, each a turn of the loop apart."""
    seen: list[bool] = []

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        arrival = scope[BODY_ARRIVAL]
        seen.append(arrival.complete)
        while (await receive()).get("more_body", False):
            pass
        seen.append(arrival.complete)
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    protocol = protocol_for(app)
    protocol.connection_made(RecordingTransport())
    for data in reads:
        protocol.data_received(data)
        await asyncio.sleep(0)  # the app's task takes its turn between the reads
    while protocol.tasks:
        await asyncio.sleep(0)
    protocol.connection_lost(None)
    return seen


def test_a_body_that_came_with_its_headers_is_marked_whole() -> None:
    assert asyncio.run(arrivals_seen(REQUEST + b"0123456789")) == [True, True]


def test_a_body_still_arriving_is_marked_whole_only_once_it_has() -> None:
    assert asyncio.run(arrivals_seen(REQUEST + b"01234", b"56789")) == [False, True]


async def read_through(arrival: BodyArrival | None) -> bytes:
    """The body ``IdleBodyTimeout`` with a timeout of 0 lets the app read, from a server
    whose ``receive`` yields to the loop once before it answers."""
    read: list[bytes] = []

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        read.append((await receive())["body"])

    async def receive() -> Message:
        await asyncio.sleep(0)
        return {"type": "http.request", "body": b"{}", "more_body": False}

    async def send(message: Message) -> None:
        pass

    scope: dict[str, Any] = {"type": "http"}
    if arrival is not None:
        scope[BODY_ARRIVAL] = arrival
    await IdleBodyTimeout(app, timeout=0, min_rate=1)(scope, receive, send)
    return read[0]


def test_a_whole_body_is_read_without_the_timer() -> None:
    arrival = BodyArrival()
    arrival.complete = True
    assert asyncio.run(read_through(arrival)) == b"{}"


@pytest.mark.parametrize("arrival", [None, BodyArrival()], ids=["no-marker", "not-yet-whole"])
def test_a_body_not_known_whole_is_timed(arrival: BodyArrival | None) -> None:
    with pytest.raises(RequestTimeout):
        asyncio.run(read_through(arrival))
