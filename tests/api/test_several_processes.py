"""Several service processes on one database and one store behave as one service."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import httpx

from tests.flows import RANKS_8, request_urls, send
from tests.server import FRESH_CONNECTIONS, ServerProcess


def on(server: ServerProcess, url: str) -> str:
    """The same signed URL, sent to another process (S3 URLs are left as they are)."""
    parts = urlsplit(url)
    if parts.hostname != "127.0.0.1" or "/api/v1/blobs/" not in parts.path:
        return url
    return urlunsplit(parts._replace(netloc=f"127.0.0.1:{server.port}"))


def test_request_on_one_upload_and_complete_on_another_read_on_a_third(tmp_path: Path) -> None:
    shared = {"TRACESETS_SECRET": os.urandom(32).hex()}
    first = ServerProcess(tmp_path / "shared", extra_env=shared)
    others = [
        ServerProcess(
            tmp_path / "shared", extra_env={**shared, "TRACESETS_BOOTSTRAP_TOKEN": first.token}
        )
    ]
    others.append(
        ServerProcess(
            tmp_path / "shared", extra_env={**shared, "TRACESETS_BOOTSTRAP_TOKEN": first.token}
        )
    )
    services = [first, *others]
    for service in services:
        service.start()
    try:
        a, b, c = (
            httpx.Client(
                base_url=s.url,
                headers={"Authorization": f"Bearer {first.token}"},
                timeout=60,
                limits=FRESH_CONNECTIONS,
            )
            for s in services
        )
        data = os.urandom(70_000)
        created = request_urls(a, {"rank0.json": data}, RANKS_8)
        [target] = created["uploads"]
        if target.get("url"):
            target = {**target, "url": on(services[1], target["url"])}
        send(target, data)
        done = b.post(f"/api/v1/tracesets/{created['tracesetId']}/complete")
        assert done.status_code == 200 and done.json()["status"] == "ready"
        got = c.get(f"/api/v1/tracesets/{created['tracesetId']}")
        same = {k: v for k, v in got.json().items() if k != "inspection"}  # it moves on meanwhile
        assert got.status_code == 200 and same == {
            k: v for k, v in done.json().items() if k != "inspection"
        }
        download = c.get(f"/api/v1/tracesets/{created['tracesetId']}/files/rank0.json")
        assert httpx.get(on(services[0], download.headers["location"]), timeout=60).content == data
        assert created["tracesetId"] in [
            t["id"] for t in a.get("/api/v1/tracesets").json()["items"]
        ]
    finally:
        for service in services:
            service.stop()
