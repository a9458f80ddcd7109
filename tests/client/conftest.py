"""Every client test runs against both clients: ``Client`` and ``AsyncClient``.

``make_client`` takes ``Client``'s arguments. Its async side is ``Blocking``: the
``AsyncClient`` behind a blocking face, each call awaited on the test's own event loop,
so one test body proves both clients. A test's synchronous transport (a fault injector
around the real network) is carried under the async client by ``Threaded``.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncIterator, Callable, Iterator
from types import TracebackType
from typing import Any, Self, cast

import httpx
import pytest

from tracesets import AsyncClient, Client

MakeClient = Callable[..., Client]


class Threaded(httpx.AsyncBaseTransport):
    """A synchronous transport under the async client: the request's body read whole,
    then sent, and the answer read whole, on a worker thread."""

    def __init__(self, sync: httpx.BaseTransport) -> None:
        self.sync = sync

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        body = await request.aread()
        plain = httpx.Request(request.method, request.url, headers=request.headers, content=body)
        return await asyncio.to_thread(self._send, plain)

    def _send(self, request: httpx.Request) -> httpx.Response:
        answer = self.sync.handle_request(request)
        try:
            raw = b"".join(cast(httpx.SyncByteStream, answer.stream))  # still encoded, as sent
        finally:
            answer.close()
        return httpx.Response(answer.status_code, headers=answer.headers, content=raw)

    async def aclose(self) -> None:
        await asyncio.to_thread(self.sync.close)


def as_async(transport: httpx.BaseTransport | None) -> httpx.AsyncBaseTransport | None:
    if transport is None or isinstance(transport, httpx.AsyncBaseTransport):
        return transport  # httpx.MockTransport serves both clients
    return Threaded(transport)


class Blocking:
    """An ``AsyncClient`` with ``Client``'s face: coroutines awaited, async iterators
    gathered into lists, on one event loop of its own."""

    def __init__(
        self,
        url: str | None = None,
        token: str | None = None,
        *,
        transport: httpx.BaseTransport | None = None,
        **options: Any,
    ) -> None:
        self._loop = asyncio.new_event_loop()
        self._client = AsyncClient(url, token, transport=as_async(transport), **options)

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._client, name)
        if inspect.isasyncgenfunction(value):
            return lambda *args, **kw: iter(self._await(_gathered(value(*args, **kw))))
        if inspect.iscoroutinefunction(value):
            return lambda *args, **kw: self._await(value(*args, **kw))
        return value

    def _await(self, work: Any) -> Any:
        return self._loop.run_until_complete(work)

    def close(self) -> None:
        if not self._loop.is_closed():
            self._await(self._client.aclose())
            self._loop.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()


async def _gathered(items: AsyncIterator[Any]) -> list[Any]:
    return [item async for item in items]


@pytest.fixture(params=["sync", "async"])
def client_kind(request: pytest.FixtureRequest) -> str:
    kind: str = request.param
    return kind


@pytest.fixture
def make_client(client_kind: str) -> Iterator[MakeClient]:
    """``Client(...)``, or the same arguments given to ``AsyncClient``; closed after."""
    made: list[Client | Blocking] = []

    def make(*args: Any, **kw: Any) -> Client:
        client = Client(*args, **kw) if client_kind == "sync" else Blocking(*args, **kw)
        made.append(client)
        return cast(Client, client)

    yield make
    for client in made:
        client.close()
