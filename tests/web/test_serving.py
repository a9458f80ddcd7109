"""The page's files: served by the service at / with a strict policy, out of the API's description."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest

from tests.server import ServerProcess
from tracesets.web import CONTENT_SECURITY_POLICY
from tracesets.web.pages import STATIC

STATIC_DIR = Path(__file__).resolve().parents[2] / "src" / "tracesets" / "web" / "static"

POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)


def test_the_policy_is_the_strict_one() -> None:
    assert CONTENT_SECURITY_POLICY == POLICY


@pytest.mark.parametrize(
    ("path", "media_type"),
    [
        ("/", "text/html; charset=utf-8"),
        ("/static/app.js", "text/javascript; charset=utf-8"),
        ("/static/app.css", "text/css; charset=utf-8"),
        ("/static/favicon.svg", "image/svg+xml"),
    ],
)
def test_page_files_are_served_with_the_policy(
    server: ServerProcess, path: str, media_type: str
) -> None:
    answer = httpx.get(server.url + path, timeout=60)
    assert answer.status_code == 200
    assert answer.headers["content-type"] == media_type
    assert answer.headers["content-security-policy"] == POLICY
    assert answer.headers["x-content-type-options"] == "nosniff"
    assert answer.headers["referrer-policy"] == "no-referrer"
    assert answer.headers["x-frame-options"] == "DENY"


def test_an_unchanged_file_is_not_sent_again(server: ServerProcess) -> None:
    first = httpx.get(f"{server.url}/static/app.js", timeout=60)
    again = httpx.get(
        f"{server.url}/static/app.js", headers={"If-None-Match": first.headers["etag"]}, timeout=60
    )
    assert again.status_code == 304 and again.content == b""


@pytest.mark.parametrize(
    "path", ["/static/nothing.js", "/static/..%2fpages.py", "/static/%2e%2e%2f__init__.py"]
)
def test_only_the_shipped_files_exist(server: ServerProcess, path: str) -> None:
    answer = httpx.get(server.url + path, timeout=60)
    assert answer.status_code == 404
    assert b"import" not in answer.content


def test_every_shipped_file_is_served() -> None:
    assert set(STATIC) == {p.name for p in STATIC_DIR.iterdir() if p.suffix != ".py"}


def test_the_page_routes_stay_out_of_the_api_description(server: ServerProcess) -> None:
    paths = httpx.get(f"{server.url}/openapi.json", timeout=60).json()["paths"]
    assert not [
        p for p in paths if not p.startswith(("/api/", "/healthz", "/livez", "/readyz", "/metrics"))
    ]


def test_no_inline_script_or_style_in_the_page() -> None:
    html = (STATIC_DIR / "index.html").read_text()
    assert "<style" not in html and " style=" not in html
    for tag in re.findall(r"<script\b[^>]*>", html):
        assert 'src="/static/' in tag, tag


@pytest.mark.parametrize("name", sorted(p.name for p in STATIC_DIR.glob("*.js")))
def test_scripts_never_turn_data_into_markup(name: str) -> None:
    """Text goes in as text nodes: none of the ways a string becomes HTML or code is used."""
    source = (STATIC_DIR / name).read_text()
    for sink in (
        "innerHTML",
        "outerHTML",
        "insertAdjacentHTML",
        "document.write",
        "eval(",
        "Function(",
    ):
        assert sink not in source, f"{name} uses {sink}"
    assert ".style." not in source and "setAttribute('style'" not in source
