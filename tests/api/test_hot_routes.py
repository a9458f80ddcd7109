"""Hot routes: served by plain endpoints, described by their FastAPI declarations, in step."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import httpx
from fastapi.routing import APIRoute
from starlette.routing import Match

from tests.flows import problems, spec
from tracesets.api import blobs, routes
from tracesets.api.app import create_app
from tracesets.api.hot import ENDPOINTS, HotRoute
from tracesets.settings import Settings

BODY = {"name": "hot", "files": [spec("a", b"x")], "workloadMetadata": {"shape": {"rankCount": 8}}}


def _declared(name: str) -> APIRoute:
    declared = [*routes.router.routes, *blobs.router.routes]
    return next(r for r in declared if isinstance(r, APIRoute) and r.name == name)


def test_each_hot_route_serves_its_declaration_and_is_matched_first(tmp_path: Path) -> None:
    app = create_app(Settings.from_env({}, data_dir=tmp_path))
    hot = [route for route in app.router.routes if isinstance(route, HotRoute)]
    assert sorted(route.documented.name for route in hot) == sorted(ENDPOINTS)
    for route in hot:
        declared = _declared(route.documented.name)
        methods = declared.methods or set()
        assert route.documented is declared
        assert (route.path, route.methods) == (declared.path, methods)  # no HEAD added
        for method in methods:
            scope = {"type": "http", "method": method, "path": declared.path, "root_path": ""}
            first = next(r for r in app.router.routes if r.matches(scope)[0] == Match.FULL)
            assert first is route, f"{method} {declared.path} is not served by its hot route"


def _header(document: dict[str, Any], path: str, name: str) -> dict[str, Any]:
    operation = document["paths"][path]["post"]
    parameter: dict[str, Any] = next(
        p for p in operation["parameters"] if p["in"] == "header" and p["name"] == name
    )
    return next(s for s in parameter["schema"]["anyOf"] if s.get("type") == "string")


def test_idempotency_key_is_checked_as_the_description_says(api: httpx.Client) -> None:
    """Each value the described schema refuses is 400, naming the header; the others pass."""
    path = "/api/v1/tracesets/upload-url"
    schema = _header(api.get("/openapi.json").json(), path, "idempotency-key")
    lowest, highest = schema["minLength"], schema["maxLength"]
    for value in ("", "k" * lowest, "k" * highest, "k" * (highest + 1), "a b", "a\tb", "ok-1"):
        fits = lowest <= len(value) <= highest and re.search(schema["pattern"], value) is not None
        answer = api.post(path, json=BODY, headers={"Idempotency-Key": value})
        if fits:
            assert answer.status_code == 201, (value, answer.text)
        else:
            assert answer.status_code == 400, (value, answer.text)
            assert [p["member"] for p in problems(answer)] == ["idempotency-key"]


def test_checks_come_in_the_declared_order(api: httpx.Client) -> None:
    """A token first (401), then the body's type (415), then the header (400)."""
    path = "/api/v1/tracesets/upload-url"
    bad_key = {"Idempotency-Key": "a b"}
    anonymous = httpx.post(f"{api.base_url}{path}", content=b"x", headers=bad_key, timeout=30)
    assert anonymous.status_code == 401
    assert anonymous.headers["WWW-Authenticate"] == "Bearer"
    text = api.post(path, content=b"x", headers={**bad_key, "Content-Type": "text/plain"})
    assert text.status_code == 415
    assert api.post(path, json=BODY, headers=bad_key).status_code == 400
