"""Small steps the API tests repeat: request URLs, PUT bytes, complete."""

from __future__ import annotations

import hashlib
import time
from typing import Any

import httpx

RANKS_8 = {"shape": {"rankCount": 8}}


def spec(name: str, data: bytes, role: str = "primary", *, with_sha: bool = True) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": name, "size": len(data), "role": role}
    if with_sha:
        entry["sha256"] = hashlib.sha256(data).hexdigest()
    return entry


def request_urls(
    api: httpx.Client,
    files: dict[str, bytes],
    metadata: Any = RANKS_8,
    *,
    name: str = "a traceset",
    with_sha: bool = True,
    baseline: str | None = None,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "name": name,
        "files": [spec(n, d, with_sha=with_sha) for n, d in files.items()],
        "workloadMetadata": metadata,
    }
    if baseline is not None:
        body["baselineId"] = baseline
    answer = api.post("/api/v1/tracesets/upload-url", json=body)
    assert answer.status_code == 201, answer.text
    created: dict[str, Any] = answer.json()
    return created


def put(url: str, data: bytes, headers: dict[str, str] | None = None) -> httpx.Response:
    return httpx.put(url, content=data, headers=headers or {}, timeout=60)


def send(target: dict[str, Any], data: bytes, *, parts: list[int] | None = None) -> None:
    """PUT a file as its upload entry says: one PUT, or one per part (only ``parts`` if given)."""
    if target.get("parts"):
        for part in target["parts"]:
            if parts is not None and part["partNumber"] not in parts:
                continue
            start = (part["partNumber"] - 1) * target["partSize"]
            answer = put(part["url"], data[start : start + part["size"]], part["headers"])
            assert answer.status_code == 200, answer.text
        return
    answer = put(target["url"], data, target["headers"])
    assert answer.status_code == 200, answer.text


def upload(
    api: httpx.Client, files: dict[str, bytes], metadata: Any = RANKS_8, **kw: Any
) -> dict[str, Any]:
    """A whole upload: request URLs, PUT every file, complete. Returns the ready traceset."""
    created = request_urls(api, files, metadata, **kw)
    for target in created["uploads"]:
        send(target, files[target["name"]])
    done = api.post(f"/api/v1/tracesets/{created['tracesetId']}/complete")
    assert done.status_code == 200, done.text
    traceset: dict[str, Any] = done.json()
    return traceset


def problems(answer: httpx.Response) -> list[dict[str, Any]]:
    assert answer.headers["content-type"] == "application/problem+json", answer.text
    body = answer.json()
    assert body["status"] == answer.status_code
    assert body["detail"] == body["errors"][0]["message"]
    errors: list[dict[str, Any]] = body["errors"]
    return errors


def inspected(api: httpx.Client, traceset_id: str, timeout: float = 600) -> dict[str, Any]:
    """The traceset once its inspection has finished (it runs in the background).

    Inspections run one at a time in each service process, behind whatever earlier
    tests queued; on a loaded machine that can take minutes. The timeout only stops a
    stuck queue from hanging the run.
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        traceset: dict[str, Any] = api.get(f"/api/v1/tracesets/{traceset_id}").json()
        if traceset["inspection"] is not None and traceset["inspection"]["status"] != "pending":
            return traceset
        time.sleep(0.2)
    raise AssertionError(f"inspection of {traceset_id} did not finish in {timeout} s")
