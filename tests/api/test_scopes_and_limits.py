"""Token scopes and revocation, every route's refusals, and the limits that protect the service."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.flows import RANKS_8, problems, request_urls, spec, upload
from tests.server import FRESH_CONNECTIONS, ServerProcess

OPENAPI = json.loads((Path(__file__).resolve().parents[2] / "openapi.json").read_text())
SAMPLE = {"traceset_id": "0" * 32, "baseline_id": "1" * 32, "name": "a", "idx": "0"}


def bearer_routes() -> list[tuple[str, str]]:
    """(method, path) of every operation that takes a bearer token, samples filled in."""
    routes = []
    for path, operations in OPENAPI["paths"].items():
        for method, operation in operations.items():
            if operation.get("security"):
                routes.append(
                    (
                        method.upper(),
                        re.sub(r"\{(\w+)(:path)?\}", lambda m: SAMPLE[m.group(1)], path),
                    )
                )
    return routes


def test_every_route_but_the_probes_and_signed_urls_needs_a_token() -> None:
    operations = [op for ops in OPENAPI["paths"].values() for op in ops.values()]
    unguarded = {op["operationId"] for op in operations if not op.get("security")}
    probes = {"healthz", "livez", "readyz"}
    # /metrics: a bearer token only when TRACESETS_METRICS=token (tests/api/test_metrics.py).
    assert unguarded == {*probes, "metrics", "upload_file", "download_signed_file"}
    assert len(bearer_routes()) == len(operations) - len(unguarded)


@pytest.mark.parametrize(("method", "path"), bearer_routes())
def test_every_route_refuses_missing_malformed_and_revoked_tokens(
    server: ServerProcess, method: str, path: str
) -> None:
    revoked = server.new_token("revoked-ws")
    done = server.cli("token", "revoke", revoked, "--data-dir", str(server.data_dir))
    assert done.returncode == 0, done.stderr
    for header in (None, "Bearer", "Bearer " + "x" * 40, "Token abc", f"Bearer {revoked}"):
        answer = httpx.request(
            method,
            server.url + path,
            headers={"Authorization": header} if header else {},
            timeout=60,
        )
        assert answer.status_code == 401, (method, path, header, answer.text)


@pytest.mark.parametrize(
    ("method", "path"), [r for r in bearer_routes() if SAMPLE["traceset_id"] in r[1]]
)
def test_every_traceset_route_hides_other_workspaces(
    server: ServerProcess, api: httpx.Client, method: str, path: str
) -> None:
    mine = upload(api, {"a": b"x"}, RANKS_8)
    theirs = server.new_token("someone-else-entirely")
    answer = httpx.request(
        method,
        server.url + path.replace(SAMPLE["traceset_id"], mine["id"]),
        headers={"Authorization": f"Bearer {theirs}"},
        json={},
        timeout=60,
    )
    assert answer.status_code == 404, (method, path, answer.text)
    assert api.get(f"/api/v1/tracesets/{mine['id']}").json()["status"] == "ready"


def scoped_client(server: ServerProcess, *scopes: str) -> httpx.Client:
    args = ["token", "create", "--workspace", "scoped", "--data-dir", str(server.data_dir)]
    for scope in scopes:
        args += ["--scope", scope]
    done = server.cli(*args)
    assert done.returncode == 0, done.stderr
    token = done.stdout.strip()
    return httpx.Client(
        base_url=server.url,
        headers={"Authorization": f"Bearer {token}"},
        timeout=60,
        limits=FRESH_CONNECTIONS,
    )


def test_each_route_checks_its_own_scope(server: ServerProcess) -> None:
    with scoped_client(server, "read", "write", "promote") as full:
        traceset = upload(full, {"a": b"x"}, RANKS_8)
    path = f"/api/v1/tracesets/{traceset['id']}"
    with scoped_client(server, "read") as reader:
        assert reader.get(path).status_code == 200
        assert reader.get("/api/v1/tracesets").status_code == 200
        refused = reader.post(
            "/api/v1/tracesets/upload-url", json={"name": "x", "files": [spec("a", b"x")]}
        )
        assert refused.status_code == 403 and "write scope" in problems(refused)[0]["message"]
        assert reader.post(f"{path}/promote", json={}).status_code == 403
        assert reader.delete(path).status_code == 403
    with scoped_client(server, "promote") as promoter:
        assert promoter.get(path).status_code == 403
        assert promoter.post(f"{path}/promote", json={}).status_code == 200
    with scoped_client(server, "write") as writer:
        assert writer.post(f"{path}/promote", json={}).status_code == 403
        assert writer.delete(path).status_code == 204


def test_revoked_token_stops_working_at_once(server: ServerProcess) -> None:
    token = server.new_token("short-lived")
    headers = {"Authorization": f"Bearer {token}"}
    assert (
        httpx.get(f"{server.url}/api/v1/tracesets", headers=headers, timeout=60).status_code == 200
    )
    listed = server.cli(
        "token", "list", "--workspace", "short-lived", "--data-dir", str(server.data_dir)
    )
    assert token not in listed.stdout and "active" in listed.stdout
    token_id = listed.stdout.split("\t")[0]
    assert (
        server.cli(
            "token", "revoke", "--id", token_id, "--data-dir", str(server.data_dir)
        ).returncode
        == 0
    )
    assert (
        httpx.get(f"{server.url}/api/v1/tracesets", headers=headers, timeout=60).status_code == 401
    )
    again = server.cli("token", "revoke", "--id", token_id, "--data-dir", str(server.data_dir))
    assert again.returncode == 1


def test_a_metrics_token_opens_no_workspace_and_is_made_only_when_asked(
    server: ServerProcess,
) -> None:
    with scoped_client(server, "metrics") as scraper:
        assert scraper.get("/api/v1/whoami").json()["scopes"] == ["metrics"]
        for method, path in bearer_routes():
            if path != "/api/v1/whoami":
                answer = scraper.request(method, path)
                assert answer.status_code == 403, (method, path, answer.text)
    made = server.cli("token", "create", "--data-dir", str(server.data_dir))
    with httpx.Client(
        base_url=server.url, headers={"Authorization": f"Bearer {made.stdout.strip()}"}
    ) as api:
        assert api.get("/api/v1/whoami").json()["scopes"] == ["read", "write", "promote"]


def test_unknown_scope_is_a_usage_error(server: ServerProcess) -> None:
    done = server.cli("token", "create", "--scope", "admin", "--data-dir", str(server.data_dir))
    assert done.returncode == 2


@pytest.fixture(scope="module")
def limited(tmp_path_factory: pytest.TempPathFactory) -> Any:
    service = ServerProcess(
        tmp_path_factory.mktemp("limited"),
        extra_env={
            "TRACESETS_MAX_BODY_BYTES": "4096",
            "TRACESETS_MAX_FILES": "2",
            "TRACESETS_MAX_METADATA_BYTES": "200",
            "TRACESETS_RATE_LIMIT": "1",
            "TRACESETS_RATE_BURST": "1000",
        },
    )
    service.start()
    yield service
    service.stop()


def limited_client(service: ServerProcess) -> httpx.Client:
    return httpx.Client(
        base_url=service.url,
        headers={"Authorization": f"Bearer {service.new_token('l')}"},
        timeout=60,
        limits=FRESH_CONNECTIONS,
    )


def test_request_body_limit_is_a_setting(limited: ServerProcess) -> None:
    with limited_client(limited) as api:
        body = {
            "name": "x",
            "files": [spec("a", b"x")],
            "workloadMetadata": {"shape": {"rankCount": 1}, "pad": "a" * 5000},
        }
        assert api.post("/api/v1/tracesets/upload-url", json=body).status_code == 413


def test_file_count_limit_is_a_setting(limited: ServerProcess) -> None:
    with limited_client(limited) as api:
        body = {"name": "x", "files": [spec(n, b"x") for n in "abc"], "workloadMetadata": RANKS_8}
        answer = api.post("/api/v1/tracesets/upload-url", json=body)
        assert answer.status_code == 400 and "1 to 2 files" in answer.json()["detail"]
        assert request_urls(api, {"a": b"x", "b": b"y"})["tracesetId"]


def test_metadata_size_limit_is_a_setting(limited: ServerProcess) -> None:
    with limited_client(limited) as api:
        body = {
            "name": "x",
            "files": [spec("a", b"x")],
            "workloadMetadata": {"shape": {"rankCount": 1}, "pad": "a" * 300},
        }
        answer = api.post("/api/v1/tracesets/upload-url", json=body)
        assert answer.status_code == 400 and "at most 200 bytes" in answer.json()["detail"]


def test_request_rate_per_token_answers_429_with_retry_after(tmp_path: Path) -> None:
    # One request in 1,000 s refills nothing while the test runs, however slowly its
    # requests are served: past the burst, every request is refused.
    service = ServerProcess(
        tmp_path / "svc", extra_env={"TRACESETS_RATE_LIMIT": "0.001", "TRACESETS_RATE_BURST": "3"}
    )
    service.start()
    try:
        with limited_client(service) as api, limited_client(service) as other:
            answers = [api.get("/api/v1/tracesets").status_code for _ in range(5)]
            assert answers == [200, 200, 200, 429, 429]
            refused = api.get("/api/v1/tracesets")
            assert refused.status_code == 429 and int(refused.headers["retry-after"]) >= 1
            assert problems(refused)
            assert other.get("/api/v1/tracesets").status_code == 200, "each token has its own rate"
    finally:
        service.stop()
