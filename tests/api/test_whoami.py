"""GET /api/v1/whoami: any known token learns its workspace, its scopes and which files the
store takes in parts; nothing changes."""

from __future__ import annotations

import itertools

import httpx
import pytest

from tests.server import ServerProcess, multipart_threshold
from tracesets.service.tokens import SCOPES

EVERY_SET = [c for n in range(1, 4) for c in itertools.combinations(SCOPES, n)]


def scoped_token(server: ServerProcess, workspace: str, scopes: tuple[str, ...]) -> str:
    args = ["token", "create", "--workspace", workspace, "--data-dir", str(server.data_dir)]
    for scope in reversed(scopes):  # given in any order, answered in the order of SCOPES
        args += ["--scope", scope]
    done = server.cli(*args)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.mark.parametrize("scopes", EVERY_SET, ids="+".join)
def test_any_token_learns_its_workspace_and_scopes(
    server: ServerProcess, scopes: tuple[str, ...]
) -> None:
    workspace = "who-" + "-".join(scopes)
    token = scoped_token(server, workspace, scopes)
    answer = httpx.get(f"{server.url}/api/v1/whoami", headers={"Authorization": f"Bearer {token}"})
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("application/json")
    assert answer.json() == {
        "workspace": workspace,
        "scopes": list(scopes),
        "multipartThreshold": multipart_threshold(),
    }


def test_whoami_changes_nothing(server: ServerProcess, api: httpx.Client) -> None:
    before = api.get("/api/v1/tracesets").json()
    for _ in range(3):
        assert api.get("/api/v1/whoami").status_code == 200
    assert api.get("/api/v1/tracesets").json() == before == {"items": [], "nextCursor": None}


def test_an_unknown_token_is_401_with_problem_details(server: ServerProcess) -> None:
    answer = httpx.get(
        f"{server.url}/api/v1/whoami", headers={"Authorization": "Bearer tsk_" + "x" * 43}
    )
    assert answer.status_code == 401
    assert answer.headers["content-type"].startswith("application/problem+json")
    assert answer.json()["errors"][0]["member"] == "Authorization"
