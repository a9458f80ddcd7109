"""A client generated from the committed openapi.json works against the real service."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx
import pytest

from tests.server import FRESH_CONNECTIONS, ServerProcess

OPENAPI = Path(__file__).resolve().parents[2] / "openapi.json"
BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    out = tmp_path_factory.mktemp("generated")
    subprocess.run(
        [
            str(BIN / "openapi-python-client"),
            "generate",
            "--path",
            str(OPENAPI),
            "--meta",
            "none",
            "--output-path",
            str(out / "tracesets_generated"),
        ],
        check=True,
        capture_output=True,
        env={**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}"},
    )
    sys.path.insert(0, str(out))
    try:
        yield importlib.import_module("tracesets_generated")
    finally:
        sys.path.remove(str(out))


def generated_client(generated: ModuleType, server: ServerProcess, token: str) -> Any:
    """The generated client, with the timeout and connections every test client has."""
    return generated.AuthenticatedClient(
        base_url=server.url,
        token=token,
        timeout=httpx.Timeout(60),
        httpx_args={"limits": FRESH_CONNECTIONS},
    )


def test_generated_client_uploads_reads_and_promotes(
    generated: ModuleType, server: ServerProcess, workspace_token: str
) -> None:
    api = importlib.import_module("tracesets_generated.api.tracesets")
    models = importlib.import_module("tracesets_generated.models")
    for name in ("request_upload_urls", "complete_traceset", "get_traceset", "promote_traceset"):
        importlib.import_module(f"tracesets_generated.api.tracesets.{name}")
    client = generated_client(generated, server, workspace_token)

    body = models.UploadUrlRequest(
        name="from a generated client",
        files=[
            models.UploadFileSpec(name="rank0.json", size=3, role=models.UploadFileSpecRole.PRIMARY)
        ],
        workload_metadata=models.UploadWorkloadMetadata(
            parallelism=models.WorkloadParallelism(dp=4, tp=2)
        ),
    )
    created = api.request_upload_urls.sync(client=client, body=body, idempotency_key="generated-1")
    assert isinstance(created, models.UploadUrlResponse)
    [target] = created.uploads
    assert (
        httpx.put(
            target.url, content=b"abc", headers=target.headers.additional_properties, timeout=60
        ).status_code
        == 200
    )
    done = api.complete_traceset.sync(client=client, traceset_id=created.traceset_id)
    assert isinstance(done, models.Traceset) and done.status == models.TracesetStatus.READY

    got = api.get_traceset.sync(client=client, traceset_id=created.traceset_id)
    assert isinstance(got, models.Traceset) and got.rank_count_derived == 8

    metadata = models.UploadWorkloadMetadata(shape=models.WorkloadShape(rank_count=8))
    metadata.additional_properties["workload_family"] = "llama"
    promoted = api.promote_traceset.sync(
        client=client,
        traceset_id=created.traceset_id,
        body=models.PromoteRequest(workload_metadata=metadata),
    )
    assert isinstance(promoted, models.PromotedTraceset)
    assert promoted.status == models.PromotedTracesetStatus.PROMOTED
    assert not [w for w in promoted.warnings if "workload_family" in w], "snake_case is read"


def test_generated_client_reads_refusals_as_problem_details(
    generated: ModuleType, server: ServerProcess, workspace_token: str
) -> None:
    api = importlib.import_module("tracesets_generated.api.tracesets.request_upload_urls")
    models = importlib.import_module("tracesets_generated.models")
    client = generated_client(generated, server, workspace_token)
    body = models.UploadUrlRequest(
        name="no rank count",
        files=[models.UploadFileSpec(name="a", size=1, role=models.UploadFileSpecRole.PRIMARY)],
    )
    refused = api.sync(client=client, body=body)
    assert isinstance(refused, models.ProblemDetails) and refused.status == 400
    assert refused.detail.startswith("Uploads with primary trace files must declare a rank count")
