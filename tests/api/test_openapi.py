"""The OpenAPI description: served, committed, and describing the metadata as the source does."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx

from tests.server import ServerProcess
from tracesets.api.app import create_app
from tracesets.settings import Settings

COMMITTED = Path(__file__).resolve().parents[2] / "openapi.json"


def live_document(tmp_path: Path) -> dict[str, Any]:
    document: dict[str, Any] = create_app(Settings.from_env({}, data_dir=tmp_path)).openapi()
    return document


def test_committed_openapi_matches_the_app(tmp_path: Path) -> None:
    committed = json.loads(COMMITTED.read_text())
    assert committed == live_document(tmp_path), (
        "openapi.json drifted from the app: run `make openapi` and commit the result"
    )


def test_served_openapi_is_3_1_with_the_metadata_schemas(server: ServerProcess) -> None:
    document = httpx.get(f"{server.url}/openapi.json", timeout=60).json()
    assert document["openapi"].startswith("3.1")
    schemas = document["components"]["schemas"]
    shape, parallelism = schemas["WorkloadShape"], schemas["WorkloadParallelism"]
    rank_count = shape["properties"]["rankCount"]
    integer = next(s for s in rank_count["anyOf"] if s.get("type") == "integer")
    assert integer["minimum"] == 1 and integer["maximum"] == 2_147_483_647
    assert {"type": "null"} in rank_count["anyOf"]
    for degree in ("dp", "tp", "sp", "ep", "pp"):
        options = parallelism["properties"][degree]["anyOf"]
        assert {"type": "null"} in options
        assert next(s for s in options if s.get("type") == "integer")["minimum"] == 1
    for name in ("UploadWorkloadMetadata", "WorkloadShape", "WorkloadParallelism"):
        assert schemas[name]["additionalProperties"] is True, name
    assert "rankCount" in schemas["UploadWorkloadMetadata"]["description"]


def test_every_operation_has_a_readable_operation_id(server: ServerProcess) -> None:
    document = httpx.get(f"{server.url}/openapi.json", timeout=60).json()
    operation_ids = {
        op["operationId"] for path in document["paths"].values() for op in path.values()
    }
    assert {
        "request_upload_urls",
        "get_traceset",
        "list_tracesets",
        "complete_traceset",
        "delete_traceset",
        "download_file",
        "upload_file",
        "healthz",
    } <= operation_ids


def test_no_operation_documents_fastapi_422(server: ServerProcess) -> None:
    document = httpx.get(f"{server.url}/openapi.json", timeout=60).json()
    for path in document["paths"].values():
        for operation in path.values():
            answer = operation["responses"].get("422")  # only the Idempotency-Key's
            assert answer is None or "ProblemDetails" in json.dumps(answer)


def test_every_operation_documents_the_400_a_malformed_request_gets(
    server: ServerProcess,
) -> None:
    # The HTTP parser refuses a malformed request line or header (a Transfer-Encoding of
    # "?9", as the fuzz sent to GET /api/v1/tracesets/{id}) before any route sees it:
    # tests/hardening/test_malformed_http.py.
    document = httpx.get(f"{server.url}/openapi.json", timeout=60).json()
    for route, path in document["paths"].items():
        for method, operation in path.items():
            answer = operation["responses"].get("400")
            assert answer is not None, (method, route)
            assert "ProblemDetails" in json.dumps(answer), (method, route)
