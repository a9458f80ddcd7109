"""The header timer runs only while a request's headers are still coming."""

from __future__ import annotations

import asyncio

from starlette.types import Receive, Scope, Send

from tests.api.test_coalesced_writes import RecordingTransport, protocol_for

REQUEST = b"GET /x HTTP/1.1\r\nHost: t\r\n\r\n"


async def app(scope: Scope, receive: Receive, send: Send) -> None:
    if scope["type"] == "http":
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})


async def timers_after(*reads: bytes) -> tuple[list[bool], int]:
    """Whether a header timer was running on opening and after each of ``reads``; how
    many timers were made."""
    protocol = protocol_for(app)
    made = 0
    arm = protocol._arm

    def counted() -> None:
        nonlocal made
        made += 1
        arm()

    protocol._arm = counted  # type: ignore[method-assign]
    protocol.connection_made(RecordingTransport())
    armed = [protocol.header_timer is not None]
    for data in reads:
        protocol.data_received(data)
        armed.append(protocol.header_timer is not None)
        while protocol.tasks:
            await asyncio.sleep(0)
    protocol.connection_lost(None)
    return armed, made


def test_headers_that_come_whole_never_arm_a_timer_after_the_first() -> None:
    # Armed for the connection's first request until its headers came; then none.
    armed, made = asyncio.run(timers_after(REQUEST, REQUEST, REQUEST * 2))
    assert (armed, made) == ([True, False, False, False], 1)


def test_headers_split_across_reads_are_timed_from_their_first_byte() -> None:
    armed, made = asyncio.run(timers_after(REQUEST, REQUEST[:10], REQUEST[10:]))
    assert (armed, made) == ([True, False, True, False], 2)


def test_a_request_after_a_whole_one_in_the_same_read_is_timed() -> None:
    armed, made = asyncio.run(timers_after(REQUEST + REQUEST[:10], REQUEST[10:]))
    assert (armed, made) == ([True, True, False], 2)
