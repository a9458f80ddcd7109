"""Tracesets for the page to show, uploaded through the HTTP API.

Metadata is sent as JSON text, not as Python values, so literals such as
``0.1000000000000000000001`` and ``2.0`` reach the service exactly as written.
"""

from __future__ import annotations

import json
from typing import Any

import httpx

from tests.flows import send, spec

DECLARED_8 = '{"shape": {"rankCount": 8}, "parallelism": {"dp": 4, "tp": 2}}'


def upload_text(
    api: httpx.Client,
    metadata: str,
    *,
    name: str,
    files: dict[str, bytes] | None = None,
    description: str | None = None,
    complete: bool = True,
) -> dict[str, Any]:
    """Request URLs with ``metadata`` as given, PUT every file, complete; the traceset's id."""
    files = files or {"traces.zip": b"trace bytes"}
    head = json.dumps(
        {"name": name, "description": description, "files": [spec(n, d) for n, d in files.items()]}
    )
    body = head[:-1] + ', "workloadMetadata": ' + metadata + "}"
    answer = api.post(
        "/api/v1/tracesets/upload-url",
        content=body.encode(),
        headers={"Content-Type": "application/json"},
    )
    assert answer.status_code == 201, answer.text
    created: dict[str, Any] = answer.json()
    if complete:
        for target in created["uploads"]:
            send(target, files[target["name"]])
        done = api.post(f"/api/v1/tracesets/{created['tracesetId']}/complete")
        assert done.status_code == 200, done.text
    return created


def tiny_trace(rank: int, world_size: int) -> bytes:
    """A Kineto trace of one rank with no events: all inspection needs to place it."""
    info = {"backend": "nccl", "rank": rank, "world_size": world_size}
    return json.dumps({"distributedInfo": info, "traceEvents": []}).encode()
