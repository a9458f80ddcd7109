"""An upload answer cut to stay bounded (``uploadsNextCursor``): the client fetches the
entries it left out from the upload status, and only its own files' (the status also
holds files other ranks added).

Through httpx's transport seam: the service's side of the cut is in
``tests/test_render_bounds.py``, and the whole flow on S3 in
``tests/api/test_hundred_thousand_ranks.py``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from tests.client.conftest import MakeClient
from tracesets.client.files import collect

URL = "http://127.0.0.1:9"
TOKEN = "tsk_test_token_0000"


def entry(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "role": "primary",
        "method": "PUT",
        "url": f"{URL}/blobs/{name}",
        "headers": {},
        "expiresAt": "2026-12-02T00:00:00.000Z",
    }


class CutService:
    """Answers add-files with one entry and a cursor, the status with the rest."""

    def __init__(self) -> None:
        self.put: list[str] = []
        self.status_cursor: str | None = None

    def __call__(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        if request.method == "GET" and path == "/api/v1/whoami":  # the token checked first
            who = {"workspace": "w", "scopes": ["write"], "multipartThreshold": None}
            return httpx.Response(200, json=who)
        if request.method == "POST" and path.endswith("/files"):
            cut = {"tracesetId": "t1", "uploads": [entry("a.json")], "uploadsNextCursor": "ZjoxMA"}
            return httpx.Response(201, json=cut)
        if request.method == "GET" and path.endswith("/uploads"):
            self.status_cursor = request.url.params.get("cursor")
            uploads = [entry("b.json"), entry("other-rank.json"), entry("c.json")]
            status: dict[str, Any] = {
                "tracesetId": "t1",
                "status": "pending",
                "received": [],
                "uploads": uploads,
                "nextCursor": None,
            }
            return httpx.Response(200, json=status)
        if request.method == "PUT":
            self.put.append(path.rsplit("/", 1)[1])
            return httpx.Response(200)
        return httpx.Response(404, json={"title": "not here"})


def files(tmp_path: Path) -> Path:
    for name in ("a.json", "b.json", "c.json"):
        (tmp_path / name).write_bytes(b"{}")
    return tmp_path


def test_the_client_fetches_what_an_answer_left_out(
    tmp_path: Path, make_client: MakeClient
) -> None:
    service = CutService()
    with make_client(URL, TOKEN, transport=httpx.MockTransport(service)) as client:
        client.add_local_files("t1", collect(files(tmp_path)))
    assert service.status_cursor == "ZjoxMA"
    assert sorted(service.put) == ["a.json", "b.json", "c.json"]


def test_a_declared_batch_fetches_what_its_answer_left_out(make_client: MakeClient) -> None:
    """The batches past the first (``_declare_flow``, add-files) take the entries their
    answer left out from the status, from its cursor on, and only their own."""
    service = CutService()
    with make_client(URL, TOKEN, transport=httpx.MockTransport(service)) as client:
        batch = [{"name": n, "size": 2, "role": "primary"} for n in ("a.json", "b.json")]
        declared = client._run(client._declare_flow("t1", [batch]))
    assert [u.name for u in declared] == ["a.json", "b.json"]
    assert service.status_cursor == "ZjoxMA"
