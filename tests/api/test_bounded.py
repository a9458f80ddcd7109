"""No answer grows with what was uploaded: list items count files, one traceset pages them.

The worst case the contract allows is built for real: 10,000 files with long names, 64 KiB
of metadata, a 16,384-character description; every answer stays under 8 MiB, and the
files route visits every file exactly once, in index order.
"""

from __future__ import annotations

import gzip
import hashlib
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.flows import request_urls, spec, upload
from tests.server import ServerProcess

BOUND = 8 * 1024 * 1024
FILES = 10_000


def metadata_of(size: int) -> dict[str, Any]:
    """Metadata declaring 8 ranks whose compact JSON is exactly ``size`` bytes."""
    base = {"shape": {"rankCount": 8}, "notes": ""}
    filler = size - len(b'{"shape":{"rankCount":8},"notes":""}')
    return {**base, "notes": "m" * filler}


def long_name(i: int) -> str:
    # 300 bytes of UTF-8, non-ASCII included: about as long as 10,000 fit in a 4 MiB body.
    return f"rank-{i:05d}/" + "é" * 140 + f"-{i:05d}.json"


@pytest.fixture(scope="module")
def huge(server_api: httpx.Client) -> dict[str, Any]:
    """A pending traceset of 10,000 long-named files, 64 KiB of metadata, a long description."""
    body: dict[str, Any] = {
        "name": "n" * 256,
        "description": "d" * 16_384,
        "files": [
            {"name": long_name(i), "size": 1_000 + i, "role": "primary"} for i in range(FILES)
        ],
        "workloadMetadata": metadata_of(65_536),
    }
    answer = server_api.post("/api/v1/tracesets/upload-url", json=body)
    assert answer.status_code == 201, answer.text[:500]
    return {"id": answer.json()["tracesetId"], "names": [f["name"] for f in body["files"]]}


@pytest.fixture(scope="module")
def server_api(server: ServerProcess) -> Iterator[httpx.Client]:
    token = server.new_token("ws-bounded-huge")
    with httpx.Client(
        base_url=server.url, headers={"Authorization": f"Bearer {token}"}, timeout=300
    ) as client:
        yield client


def test_list_items_count_their_files_instead_of_listing_them(api: httpx.Client) -> None:
    created = request_urls(api, {"a.json": b"aaaa", "b.json": b"bb", "c.log": b"c"})
    first = created["uploads"][0]
    assert httpx.put(first["url"], content=b"aaaa", headers=first["headers"]).status_code == 200
    items = api.get("/api/v1/tracesets").json()["items"]
    assert len(items) == 1
    item = items[0]
    assert "files" not in item
    assert item["fileCount"] == 3 and item["fileBytes"] == 7
    # With S3 arrival is seen at complete; the local store records it at the PUT.
    assert item["filesReceived"] in (0, 1)
    assert item["inspection"] is None
    done = upload(api, {"rank0.json": b"{}"})
    listed = api.get("/api/v1/tracesets").json()["items"][0]
    assert listed["id"] == done["id"]
    assert (listed["fileCount"], listed["fileBytes"], listed["filesReceived"]) == (1, 2, 1)
    assert listed["inspection"]["status"] in ("pending", "done", "failed")
    assert set(listed["inspection"]) == {"status", "ok"}


def test_an_ordinary_traceset_lists_all_its_files_with_their_summary(api: httpx.Client) -> None:
    files = {f"rank{i}.json": bytes([i]) * (i + 1) for i in range(5)}
    done = upload(api, files)
    got = api.get(f"/api/v1/tracesets/{done['id']}").json()
    assert [f["name"] for f in got["files"]] == list(files)
    assert got["filesNextCursor"] is None
    assert (got["fileCount"], got["fileBytes"], got["filesReceived"]) == (5, 15, 5)
    paged = api.get(f"/api/v1/tracesets/{done['id']}/files", params={"limit": 2})
    assert paged.status_code == 200
    assert [f["name"] for f in paged.json()["items"]] == ["rank0.json", "rank1.json"]
    assert paged.json()["items"][0] == got["files"][0]


def test_list_stays_bounded_and_counts_10000_files(
    server_api: httpx.Client, huge: dict[str, Any]
) -> None:
    answer = server_api.get("/api/v1/tracesets", params={"limit": 500})
    assert answer.status_code == 200
    assert len(answer.content) < 200_000
    (item,) = [t for t in answer.json()["items"] if t["id"] == huge["id"]]
    assert "files" not in item
    assert item["fileCount"] == FILES
    assert item["fileBytes"] == sum(1_000 + i for i in range(FILES))
    assert item["filesReceived"] == 0


def test_get_pages_10000_files_and_the_files_route_visits_each_once(
    server_api: httpx.Client, huge: dict[str, Any]
) -> None:
    answer = server_api.get(f"/api/v1/tracesets/{huge['id']}")
    assert answer.status_code == 200
    assert len(answer.content) < BOUND
    got = answer.json()
    assert got["fileCount"] == FILES
    assert 0 < len(got["files"]) <= 1_000
    assert got["filesNextCursor"] is not None
    assert len(got["workloadMetadata"]["notes"]) > 65_000

    seen = [f["name"] for f in got["files"]]
    cursor = got["filesNextCursor"]
    pages = 0
    while cursor is not None:
        page = server_api.get(f"/api/v1/tracesets/{huge['id']}/files", params={"cursor": cursor})
        assert page.status_code == 200, page.text
        assert len(page.content) < BOUND
        seen += [f["name"] for f in page.json()["items"]]
        cursor = page.json()["nextCursor"]
        pages += 1
    assert seen == huge["names"]
    assert pages == FILES // 1_000 - 1

    from_start: list[str] = []
    cursor = None
    while True:
        params: dict[str, Any] = {"limit": 999}
        if cursor is not None:
            params["cursor"] = cursor
        body = server_api.get(f"/api/v1/tracesets/{huge['id']}/files", params=params).json()
        assert len(body["items"]) <= 999
        from_start += [f["name"] for f in body["items"]]
        cursor = body["nextCursor"]
        if cursor is None:
            break
    assert from_start == huge["names"]


@pytest.mark.parametrize(
    ("params", "member"),
    [
        ({"limit": 0}, "limit"),
        ({"limit": 1_001}, "limit"),
        ({"cursor": "not-a-cursor"}, "cursor"),
    ],
)
def test_bad_files_parameters_are_400(
    api: httpx.Client, params: dict[str, Any], member: str
) -> None:
    created = request_urls(api, {"a": b"x"})
    answer = api.get(f"/api/v1/tracesets/{created['tracesetId']}/files", params=params)
    assert answer.status_code == 400
    assert answer.json()["errors"][0]["member"] == member


def test_a_list_cursor_is_not_a_files_cursor(api: httpx.Client) -> None:
    for i in range(2):
        request_urls(api, {"a": b"x"}, name=f"t{i}")
    cursor = api.get("/api/v1/tracesets", params={"limit": 1}).json()["nextCursor"]
    some = api.get("/api/v1/tracesets", params={"limit": 1}).json()["items"][0]["id"]
    answer = api.get(f"/api/v1/tracesets/{some}/files", params={"cursor": cursor})
    assert answer.status_code == 400


def test_files_of_an_unknown_traceset_are_404(api: httpx.Client) -> None:
    assert api.get("/api/v1/tracesets/nothing-here/files").status_code == 404


def test_a_page_of_the_list_stops_before_4_mib_and_its_cursor_goes_on(
    api: httpx.Client,
) -> None:
    made = []
    for i in range(70):  # 70 times 64 KiB of metadata is more than a page may hold
        body = {
            "name": f"big {i}",
            "files": [spec("rank0.json", b"x")],
            "workloadMetadata": metadata_of(65_536),
        }
        answer = api.post("/api/v1/tracesets/upload-url", json=body)
        assert answer.status_code == 201
        made.append(answer.json()["tracesetId"])
    seen: list[str] = []
    cursor = None
    pages = 0
    while True:
        params: dict[str, Any] = {"limit": 500}
        if cursor is not None:
            params["cursor"] = cursor
        answer = api.get("/api/v1/tracesets", params=params)
        assert len(answer.content) < BOUND
        seen += [t["id"] for t in answer.json()["items"]]
        cursor = answer.json()["nextCursor"]
        pages += 1
        if cursor is None:
            break
    assert seen == made[::-1]
    assert pages >= 2


def test_json_answers_are_gzipped_when_the_client_accepts_it(api: httpx.Client) -> None:
    for i in range(20):
        request_urls(api, {"a": b"x"}, name=f"t{i}")
    plain = api.get("/api/v1/tracesets", headers={"Accept-Encoding": "identity"})
    assert "content-encoding" not in plain.headers
    assert plain.headers["vary"] == "Accept-Encoding"
    with api.stream("GET", "/api/v1/tracesets", headers={"Accept-Encoding": "gzip"}) as zipped:
        assert zipped.headers["content-encoding"] == "gzip"
        assert zipped.headers["vary"] == "Accept-Encoding"
        raw = b"".join(zipped.iter_raw())
    assert len(raw) < len(plain.content)
    assert gzip.decompress(raw) == plain.content
    small = api.get("/healthz", headers={"Accept-Encoding": "gzip"})
    assert "content-encoding" not in small.headers


def test_signed_downloads_are_never_recompressed(local_api: httpx.Client) -> None:
    data = b"\x00" * 200_000 + b"compressible" * 1_000
    done = upload(local_api, {"rank0.json": data})
    found = local_api.get(
        f"/api/v1/tracesets/{done['id']}/files/rank0.json", follow_redirects=False
    )
    assert found.status_code == 307
    location = found.headers["location"]
    with httpx.stream("GET", location, headers={"Accept-Encoding": "gzip"}, timeout=60) as got:
        assert got.status_code == 200
        assert "content-encoding" not in got.headers
        assert int(got.headers["content-length"]) == len(data)
        raw = b"".join(got.iter_raw())
    assert hashlib.sha256(raw).hexdigest() == hashlib.sha256(data).hexdigest()


def test_upload_status_pages_10000_files_each_once(
    server_api: httpx.Client, huge: dict[str, Any]
) -> None:
    seen: list[str] = []
    cursor = None
    pages = 0
    while True:
        params: dict[str, Any] = {} if cursor is None else {"cursor": cursor}
        answer = server_api.get(f"/api/v1/tracesets/{huge['id']}/uploads", params=params)
        assert answer.status_code == 200, answer.text[:300]
        assert len(answer.content) < BOUND
        body = answer.json()
        assert body["received"] == []
        seen += [u["name"] for u in body["uploads"]]
        assert all(u["url"] or u["parts"] for u in body["uploads"])
        cursor = body["nextCursor"]
        pages += 1
        if cursor is None:
            break
    assert seen == huge["names"]
    assert pages >= FILES // 1_000
    small = server_api.get(f"/api/v1/tracesets/{huge['id']}/uploads", params={"limit": 3})
    assert [u["name"] for u in small.json()["uploads"]] == huge["names"][:3]
