"""What survives: a restart keeps every traceset and byte; 50 concurrent uploads all land."""

from __future__ import annotations

import hashlib
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

from tests.flows import inspected, send, upload
from tests.server import FRESH_CONNECTIONS, ServerProcess


def test_stop_and_restart_keeps_tracesets_and_files(tmp_path: Path) -> None:
    service = ServerProcess(tmp_path / "svc")
    service.start()
    data = os.urandom(123_457)
    try:
        with httpx.Client(
            base_url=service.url,
            headers={"Authorization": f"Bearer {service.token}"},
            timeout=60,
            limits=FRESH_CONNECTIONS,
        ) as api:
            made = upload(api, {"rank0.json": data}, {"parallelism": {"dp": 2, "tp": 2}})
            before = inspected(api, made["id"])
        service.stop()
        service.start()
        with httpx.Client(
            base_url=service.url,
            headers={"Authorization": f"Bearer {service.token}"},
            timeout=60,
            limits=FRESH_CONNECTIONS,
        ) as api:
            after = api.get(f"/api/v1/tracesets/{before['id']}").json()
            assert after == before
            got = api.get(
                f"/api/v1/tracesets/{before['id']}/files/rank0.json", follow_redirects=True
            )
            assert got.content == data
    finally:
        service.stop()


def test_upload_urls_signed_before_a_restart_still_work(tmp_path: Path) -> None:
    service = ServerProcess(tmp_path / "svc")
    service.start()
    try:
        with httpx.Client(
            base_url=service.url,
            headers={"Authorization": f"Bearer {service.token}"},
            timeout=60,
            limits=FRESH_CONNECTIONS,
        ) as api:
            created = api.post(
                "/api/v1/tracesets/upload-url",
                json={"name": "x", "files": [{"name": "a", "size": 3, "role": "supporting"}]},
            ).json()
            service.stop()
            service.start()
            send(created["uploads"][0], b"abc")
            assert (
                api.post(f"/api/v1/tracesets/{created['tracesetId']}/complete").status_code == 200
            )
    finally:
        service.stop()


def test_50_concurrent_uploads_lose_nothing(server: ServerProcess, api: httpx.Client) -> None:
    payloads = {i: os.urandom(20_000 + i) for i in range(50)}

    def one(i: int) -> str:
        with httpx.Client(
            base_url=server.url, headers=dict(api.headers), timeout=120, limits=FRESH_CONNECTIONS
        ) as client:
            return str(
                upload(
                    client,
                    {f"rank{i}.json": payloads[i]},
                    {"shape": {"rankCount": 50}},
                    name=f"run {i}",
                )["id"]
            )

    with ThreadPoolExecutor(max_workers=50) as pool:
        made = dict(zip(range(50), pool.map(one, range(50)), strict=True))
    listed = api.get("/api/v1/tracesets", params={"limit": 500}).json()["items"]
    assert sorted(t["id"] for t in listed) == sorted(made.values())
    assert all(t["status"] == "ready" for t in listed)
    for i, traceset_id in made.items():
        got = api.get(f"/api/v1/tracesets/{traceset_id}/files/rank{i}.json", follow_redirects=True)
        assert hashlib.sha256(got.content).digest() == hashlib.sha256(payloads[i]).digest()
