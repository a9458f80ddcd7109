"""Tracesets in every state, for requests that must reach past "no such traceset".

Generated path parameters almost never name a traceset that exists, so on their own
they only ever meet 404. The fuzzer swaps some of them for these (and the signed URLs
of their files), so every route's real work is fuzzed too.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from urllib.parse import parse_qsl, urlsplit

import httpx

from tests.flows import request_urls, send, spec, upload


@dataclass(frozen=True, slots=True)
class SignedURL:
    """A URL the service signed, split the way the OpenAPI description names its parts."""

    traceset_id: str
    idx: int
    expires: str
    signature: str

    @classmethod
    def parse(cls, url: str) -> SignedURL | None:
        """None for a URL the service does not serve itself (S3's)."""
        parts = urlsplit(url)
        segments = parts.path.split("/")
        if "/api/v1/blobs/" not in parts.path:
            return None
        query = dict(parse_qsl(parts.query))
        return cls(segments[-2], int(segments[-1]), query["expires"], query["signature"])


@dataclass(slots=True)
class Pool:
    """Ids and file names of tracesets made for the fuzzer, by state."""

    pending: list[str] = field(default_factory=list)
    ready: list[str] = field(default_factory=list)
    promoted: list[str] = field(default_factory=list)
    doomed: list[str] = field(default_factory=list)  # for DELETE, so the others stay
    files: dict[str, list[str]] = field(default_factory=dict)
    uploads: list[SignedURL] = field(default_factory=list)
    downloads: list[SignedURL] = field(default_factory=list)

    @property
    def lasting(self) -> list[str]:
        return [*self.pending, *self.ready, *self.promoted]


FILES = {"rank0.json": b'{"traceEvents": []}', "logs/run.txt": os.urandom(300), "empty": b""}
PROMOTABLE = {
    "shape": {"rankCount": 8, "global_batch_size": 64},
    "parallelism": {"dp": 4, "tp": 2},
    "workload_family": "llama",
}


def upload_supporting(api: httpx.Client, name: str, data: bytes) -> str:
    """A traceset of one supporting file and no workloadMetadata (no rank count)."""
    body = {"name": "fuzz: no ranks", "files": [spec(name, data, role="supporting")]}
    created = api.post("/api/v1/tracesets/upload-url", json=body).json()
    send(created["uploads"][0], data)
    done = api.post(f"/api/v1/tracesets/{created['tracesetId']}/complete")
    assert done.status_code == 200, done.text
    return str(created["tracesetId"])


def make_pool(api: httpx.Client, copies: int = 2) -> Pool:
    pool = Pool()
    for _ in range(copies):
        pending = request_urls(api, FILES, PROMOTABLE, name="fuzz: pending")
        pool.pending.append(pending["tracesetId"])
        for target in pending["uploads"]:
            if target["name"] == "empty":
                send(target, b"")  # one file arrived, the others not
            if (signed := SignedURL.parse(target.get("url") or "")) is not None:
                pool.uploads.append(signed)
        ready = upload(api, FILES, PROMOTABLE, name="fuzz: ready")
        pool.ready.append(ready["id"])
        promoted = upload(api, FILES, PROMOTABLE, name="fuzz: promoted")
        assert api.post(f"/api/v1/tracesets/{promoted['id']}/promote", json={}).is_success
        pool.promoted.append(promoted["id"])
        pool.ready.append(upload_supporting(api, "notes.txt", b"supporting only"))
    for traceset_id in pool.lasting:
        got = api.get(f"/api/v1/tracesets/{traceset_id}").json()
        pool.files[traceset_id] = [f["name"] for f in got["files"]]
    for traceset_id in [*pool.ready, *pool.promoted]:
        for name in pool.files[traceset_id]:
            location = api.get(f"/api/v1/tracesets/{traceset_id}/files/{name}").headers["location"]
            if (signed := SignedURL.parse(location)) is not None:
                pool.downloads.append(signed)
    for _ in range(4 * copies):
        pool.doomed.append(upload(api, {"a": b"doomed"}, name="fuzz: doomed")["id"])
    return pool
