"""Signed URLs are built on the configured address, never on the request's ``Host``.

A ``Host`` header is whatever the sender writes: URLs built on it would send a client's
bytes, or its download, to the sender's machine.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.flows import request_urls, upload
from tests.server import ServerProcess

EVIL = {"Host": "evil.example:666", "X-Forwarded-Host": "evil.example:666"}


def urls(api: httpx.Client, headers: dict[str, str], public: str | None = None) -> list[str]:
    """Every signed URL the service hands out: upload, upload status, download.

    With ``public`` (a public URL that does not resolve here), uploads go to the service
    directly: the same path and query on its own address.
    """
    created = request_urls(api, {"a": b"x", "b": b"y"})
    found = [entry["url"] for entry in created["uploads"]]
    again = api.get(f"/api/v1/tracesets/{created['tracesetId']}/uploads", headers=headers)
    found += [entry["url"] for entry in again.json()["uploads"]]
    fresh = api.post(
        "/api/v1/tracesets/upload-url",
        json={"name": "t", "files": [{"name": "c", "size": 1, "role": "supporting"}]},
        headers=headers,
    )
    assert fresh.status_code == 201, fresh.text
    found += [entry["url"] for entry in fresh.json()["uploads"]]
    if public is None:
        traceset = upload(api, {"d": b"z"})
    else:
        pending = request_urls(api, {"d": b"z"})
        direct = pending["uploads"][0]["url"].replace(public, str(api.base_url).rstrip("/"))
        assert httpx.put(direct, content=b"z").status_code == 200
        traceset = api.post(f"/api/v1/tracesets/{pending['tracesetId']}/complete").json()
    download = api.get(f"/api/v1/tracesets/{traceset['id']}/files/d", headers=headers)
    assert download.status_code == 307, download.text
    found.append(download.headers["location"])
    assert len(found) == 6
    return found


def test_urls_are_on_the_listening_address_whatever_the_host(
    local_server: ServerProcess, local_api: httpx.Client
) -> None:
    for url in urls(local_api, EVIL):
        assert url.startswith(f"{local_server.url}/api/v1/blobs/"), url
    # And they work: the upload URL an evil Host got is the service's own.
    created = local_api.post(
        "/api/v1/tracesets/upload-url",
        json={"name": "t", "files": [{"name": "c", "size": 1, "role": "supporting"}]},
        headers=EVIL,
    ).json()
    assert httpx.put(created["uploads"][0]["url"], content=b"c").status_code == 200


def test_no_url_names_the_requests_host_on_any_storage(api: httpx.Client) -> None:
    """With S3 the URLs are the bucket's; with local files, the service's."""
    for url in urls(api, EVIL):
        assert "evil.example" not in url, url
        assert url.startswith("http"), url


@pytest.fixture
def configured(tmp_path: Path) -> Iterator[ServerProcess]:
    service = ServerProcess(
        tmp_path / "svc",
        extra_env={"TRACESETS_PUBLIC_URL": "https://tracesets.example:8443/"},
        local_files=True,
        workers=2,
    )
    service.start()
    yield service
    service.stop()


def test_public_url_is_the_base_of_every_url_with_several_workers(
    configured: ServerProcess,
) -> None:
    headers: dict[str, Any] = {"Authorization": f"Bearer {configured.token}"}
    with httpx.Client(base_url=configured.url, headers=headers, timeout=60) as api:
        for url in urls(api, EVIL, public="https://tracesets.example:8443"):
            assert url.startswith("https://tracesets.example:8443/api/v1/blobs/"), url
        assert api.get("/", headers=EVIL).status_code == 200, "the web page is served"


def test_several_workers_use_the_listening_address(tmp_path: Path) -> None:
    service = ServerProcess(tmp_path / "svc", local_files=True, workers=2)
    service.start()
    try:
        headers = {"Authorization": f"Bearer {service.token}"}
        with httpx.Client(base_url=service.url, headers=headers, timeout=60) as api:
            for _ in range(3):  # the requests spread over the workers
                for url in urls(api, EVIL):
                    assert url.startswith(f"{service.url}/api/v1/blobs/"), url
    finally:
        service.stop()
