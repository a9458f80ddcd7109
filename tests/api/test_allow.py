"""Every documented path answers an undocumented method 405 with its own methods in Allow.

A concrete path is its route's alone, as OpenAPI matches it: ``/api/v1/tracesets/upload-url``
is not the traceset "upload-url" of ``/api/v1/tracesets/{traceset_id}``, for any method.
"""

from __future__ import annotations

import re

import httpx
import pytest

from tests.server import ServerProcess

METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE")


def documented(server: ServerProcess) -> dict[str, set[str]]:
    """Each path of the served description, its parameters filled in, and its methods."""
    paths = httpx.get(f"{server.url}/openapi.json", timeout=60).json()["paths"]
    return {
        re.sub(r"\{[^}]+\}", "0", path): {m.upper() for m in item if m.upper() in METHODS}
        for path, item in paths.items()
    }


def test_every_path_answers_options_405_with_its_own_methods(
    server: ServerProcess, api: httpx.Client
) -> None:
    for path, methods in documented(server).items():
        answer = api.options(path)
        assert answer.status_code == 405, (path, answer.status_code, answer.text[:200])
        assert set(answer.headers["allow"].split(", ")) - {"HEAD"} == methods, path


@pytest.mark.parametrize("method", [m for m in METHODS if m not in ("POST", "HEAD")])
def test_upload_url_answers_any_other_method_405_allowing_post_alone(
    api: httpx.Client, method: str
) -> None:
    answer = api.request(method, "/api/v1/tracesets/upload-url")
    assert answer.status_code == 405, answer.text[:200]
    assert answer.headers["allow"] == "POST"
    assert answer.headers["content-type"] == "application/problem+json"
    assert answer.json()["status"] == 405


def test_every_documented_path_answers_each_undocumented_method_405(
    server: ServerProcess, api: httpx.Client
) -> None:
    for path, methods in documented(server).items():
        for method in set(METHODS) - methods - {"HEAD"}:
            answer = api.request(method, path)
            assert answer.status_code == 405, (method, path, answer.status_code)
            assert set(answer.headers["allow"].split(", ")) - {"HEAD"} == methods
