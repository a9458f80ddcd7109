"""Workspaces and tokens: 401 without a known token, other workspaces' tracesets invisible."""

from __future__ import annotations

import httpx
import pytest

from tests.flows import problems, upload
from tests.server import FRESH_CONNECTIONS, ServerProcess


@pytest.mark.parametrize("path", ["/healthz", "/livez", "/readyz", "/metrics"])
def test_probes_need_no_token(server: ServerProcess, path: str) -> None:
    """(/metrics: by default, to loopback clients, as the tests are.)"""
    assert httpx.get(f"{server.url}{path}", timeout=60).status_code == 200


@pytest.mark.parametrize(
    "header", [None, "Bearer", "Bearer nope-not-a-token", "Basic dXNlcjpwYXNz"]
)
def test_routes_refuse_missing_or_unknown_tokens(server: ServerProcess, header: str | None) -> None:
    headers = {"Authorization": header} if header else {}
    for method, path in [
        ("GET", "/api/v1/tracesets"),
        ("POST", "/api/v1/tracesets/upload-url"),
        ("GET", "/api/v1/tracesets/abc"),
        ("POST", "/api/v1/tracesets/abc/complete"),
        ("DELETE", "/api/v1/tracesets/abc"),
        ("GET", "/api/v1/tracesets/abc/files/a"),
    ]:
        answer = httpx.request(method, f"{server.url}{path}", headers=headers, timeout=60)
        assert answer.status_code == 401, (method, path)
        assert answer.headers["www-authenticate"] == "Bearer"
        assert problems(answer)


def test_other_workspaces_tracesets_are_invisible(server: ServerProcess, api: httpx.Client) -> None:
    traceset = upload(api, {"a": b"secret"})
    other = server.new_token("someone-else")
    with httpx.Client(
        base_url=server.url,
        headers={"Authorization": f"Bearer {other}"},
        timeout=60,
        limits=FRESH_CONNECTIONS,
    ) as them:
        path = f"/api/v1/tracesets/{traceset['id']}"
        assert them.get(path).status_code == 404
        assert them.post(f"{path}/complete").status_code == 404
        assert them.get(f"{path}/files/a").status_code == 404
        assert them.delete(path).status_code == 404
        assert traceset["id"] not in [
            t["id"] for t in them.get("/api/v1/tracesets").json()["items"]
        ]
    assert api.get(f"/api/v1/tracesets/{traceset['id']}").status_code == 200


def test_token_create_prints_a_working_token(server: ServerProcess) -> None:
    token = server.new_token("fresh")
    answer = httpx.get(
        f"{server.url}/api/v1/tracesets", headers={"Authorization": f"Bearer {token}"}, timeout=60
    )
    assert answer.status_code == 200 and answer.json()["items"] == []


def test_tokens_are_stored_only_as_hashes(server: ServerProcess) -> None:
    token = server.new_token("hashed")
    stored = [str(row[0]) for row in server.query("SELECT token_hash FROM tokens")]
    assert token not in stored and server.token not in stored
    assert all(len(h) == 64 for h in stored)
