"""The hot routes' requests go past the stack's other layers; every other request, and
every error, is answered as the whole stack answers it."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from starlette.middleware.errors import ServerErrorMiddleware
from starlette.types import Receive, Scope, Send

from tests.flows import spec
from tracesets.api.app import create_app
from tracesets.api.front import HotFront
from tracesets.api.hot import HotRoute
from tracesets.problems import Conflict, Problem
from tracesets.settings import Settings

TOKEN = "front-token-" + "0" * 24
UPLOAD_URL = "/api/v1/tracesets/upload-url"
BODY = {
    "name": "front",
    "files": [spec("a", b"x")],
    "workloadMetadata": {"shape": {"rankCount": 8}},
}


@pytest.fixture
def app(tmp_path: Path) -> FastAPI:
    return create_app(Settings.from_env({"TRACESETS_BOOTSTRAP_TOKEN": TOKEN}, data_dir=tmp_path))


class Client:
    """Requests to ``app`` in process, its lifespan run around them, one event loop."""

    def __init__(self, app: FastAPI) -> None:
        self.app = app
        self.loop = asyncio.new_event_loop()
        self.lifespan = app.router.lifespan_context(app)
        self.loop.run_until_complete(self.lifespan.__aenter__())
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
        headers = {"Authorization": f"Bearer {TOKEN}"}
        self.http = httpx.AsyncClient(transport=transport, base_url="http://t", headers=headers)

    def request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        return self.loop.run_until_complete(self.http.request(method, path, **kwargs))

    def get(self, path: str, **kwargs: Any) -> httpx.Response:
        return self.request("GET", path, **kwargs)

    def post(self, path: str, **kwargs: Any) -> httpx.Response:
        return self.request("POST", path, **kwargs)

    def close(self) -> None:
        self.loop.run_until_complete(self.http.aclose())
        self.loop.run_until_complete(self.lifespan.__aexit__(None, None, None))
        self.loop.run_until_complete(_cancelled_tasks_finished())
        self.loop.close()


async def _cancelled_tasks_finished() -> None:
    """The background tasks the lifespan cancelled, let finish."""
    left = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
    await asyncio.gather(*left, return_exceptions=True)


@pytest.fixture
def client(app: FastAPI) -> Iterator[Client]:
    client = Client(app)
    try:
        client.get("/healthz")  # the stack is built at the first request
        yield client
    finally:
        client.close()


class Recorder:
    """The stack behind the front, recording the paths that reach it."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.paths: list[str] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            self.paths.append(f"{scope['method']} {scope['path']}")
        await self.app(scope, receive, send)


def layers(app: FastAPI) -> Iterator[Any]:
    """The built stack, outermost first, down to the router."""
    layer: Any = app.middleware_stack
    assert layer is not None
    while layer is not None:
        yield layer
        layer = getattr(layer, "app", None)


def front_of(app: FastAPI) -> HotFront:
    """The front, just inside the error layer (and the observer outside it all)."""
    stack = list(layers(app))
    fronts = [i for i, layer in enumerate(stack) if isinstance(layer, HotFront)]
    assert len(fronts) == 1, stack
    assert isinstance(stack[fronts[0] - 1], ServerErrorMiddleware), stack
    front: HotFront = stack[fronts[0]]
    return front


def test_only_requests_a_hot_route_fully_matches_go_down_the_stack_past_the_front(
    app: FastAPI, client: Client
) -> None:
    front = front_of(app)
    behind = front.app = Recorder(front.app)
    created = client.post(UPLOAD_URL, json=BODY)
    assert created.status_code == 201, created.text
    traceset = created.json()["tracesetId"]
    assert client.get(f"/api/v1/tracesets/{traceset}").json()["status"] == "pending"
    assert behind.paths == []
    listed = client.get("/api/v1/tracesets")
    refused = client.request("PUT", UPLOAD_URL)  # the hot route's path, another method
    assert listed.status_code == 200
    assert refused.status_code == 405
    assert "POST" in refused.headers["allow"].split(", ")
    assert behind.paths == ["GET /api/v1/tracesets", f"PUT {UPLOAD_URL}"]


def test_a_hot_endpoints_errors_are_answered_by_the_apps_handlers(
    app: FastAPI, client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    route = next(r for r in app.router.routes if isinstance(r, HotRoute) and r.path == UPLOAD_URL)

    async def refusing(_: Any) -> Any:
        raise Conflict.of([Problem("name", "front", "refused here")])

    async def failing(_: Any) -> Any:
        raise RuntimeError("a bug")

    monkeypatch.setattr(route, "endpoint", refusing)
    conflict = client.post(UPLOAD_URL, json=BODY)
    assert conflict.status_code == 409
    assert conflict.headers["content-type"] == "application/problem+json"
    assert conflict.json()["errors"][0]["message"] == "refused here"
    monkeypatch.setattr(route, "endpoint", failing)
    broken = client.post(UPLOAD_URL, json=BODY)
    assert (broken.status_code, broken.text) == (500, "Internal Server Error")


def test_a_hot_routes_answer_is_compressed_for_a_client_that_accepts_gzip(
    client: Client,
) -> None:
    many = {**BODY, "files": [spec(f"rank{k:03d}.json", b"x") for k in range(40)]}
    plain = client.post(UPLOAD_URL, json=many, headers={"Accept-Encoding": "identity"})
    packed = client.post(UPLOAD_URL, json=many, headers={"Accept-Encoding": "gzip"})
    assert (plain.status_code, packed.status_code) == (201, 201)
    assert "content-encoding" not in plain.headers
    assert plain.headers["vary"] == "Accept-Encoding"
    assert packed.headers["content-encoding"] == "gzip"
    assert int(packed.headers["content-length"]) < len(plain.content)
    assert len(packed.json()["uploads"]) == 40  # httpx decoded it


def test_a_files_bytes_are_answered_as_stored_with_no_vary(client: Client) -> None:
    """The signed PUT is a hot route the compression leaves alone, as the stack does."""
    created = client.post(UPLOAD_URL, json=BODY)
    url = httpx.URL(created.json()["uploads"][0]["url"])
    target = url.raw_path.decode()
    for accepted in ("gzip", "identity"):
        sent = client.request("PUT", target, content=b"x", headers={"Accept-Encoding": accepted})
        assert sent.status_code == 200, sent.text
        assert "vary" not in sent.headers
        assert "content-encoding" not in sent.headers


def test_no_front_when_fastapi_observes_requests(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FASTAPI_OTEL_AUTO_CONFIGURE", "true")
    app = create_app(Settings.from_env({"TRACESETS_BOOTSTRAP_TOKEN": TOKEN}, data_dir=tmp_path))
    client = Client(app)
    try:
        assert client.get("/healthz").status_code == 200
    finally:
        client.close()
    stack = list(layers(app))
    assert any(isinstance(layer, ServerErrorMiddleware) for layer in stack), stack
    assert not any(isinstance(layer, HotFront) for layer in stack), stack
