"""The token is read from Authorization exactly as FastAPI's HTTPBearer reads it."""

from __future__ import annotations

import asyncio

import pytest
from starlette.requests import Request

from tracesets.api.deps import _bearer, bearer_token

VALUES = [
    None,
    "",
    "Bearer",
    "Bearer ",
    "Bearer  ",
    "Bearer abc",
    "bearer abc",
    "BEARER abc",
    "Bearer  abc  ",
    "Bearer a b",
    "Basic dXNlcjpwYXNz",
    " Bearer abc",
    "Bearerabc",
    "Bearer\tabc",
]


def request_with(value: str | None) -> Request:
    headers = [] if value is None else [(b"authorization", value.encode())]
    return Request({"type": "http", "method": "GET", "path": "/", "headers": headers})


@pytest.mark.parametrize("value", VALUES)
def test_the_token_is_what_http_bearer_finds(value: str | None) -> None:
    found = asyncio.run(_bearer(request_with(value)))
    assert bearer_token(request_with(value)) == (None if found is None else found.credentials)
