"""Wrong bytes sent in one PUT never block a traceset: they are refused, or removed.

Local files: the service checks the size and sha256 as the bytes arrive and keeps none
of a wrong PUT (400). S3 refuses them too (the URL signs the size and the declared
x-amz-checksum-sha256). A store that checks neither (moto, the scaled pass's S3, and some
S3-compatible stores) keeps them, and ``If-None-Match: *`` would then refuse every later
PUT to the key (412): ``complete`` removes the wrong object, answering 409 naming the
file, so that the right bytes can be sent. Either way the test goes on the same: 409 at
``complete``, the file listed again by the status route, the right bytes accepted, and a
traceset ready with them. The file sent right beside it is kept as it was.
"""

from __future__ import annotations

import hashlib
import secrets
from typing import Any

import httpx
import pytest

from tests.flows import problems, put, request_urls, send

RIGHT = secrets.token_bytes(3000)
BESIDE = secrets.token_bytes(2000)


def wrong_for(with_sha: bool) -> bytes:
    """Bytes complete can tell are not the file: other bytes of its size where a sha256 was
    declared, else one byte more than its size."""
    return bytes(b ^ 0xFF for b in RIGHT) if with_sha else RIGHT + b"!"


@pytest.mark.parametrize("url", ["the same URL", "a re-issued URL"])
@pytest.mark.parametrize("with_sha", [True, False], ids=["sha256 declared", "size only"])
def test_wrong_bytes_are_removed_and_the_right_ones_complete(
    api: httpx.Client, with_sha: bool, url: str
) -> None:
    created = request_urls(api, {"rank0.json": RIGHT, "rank1.json": BESIDE}, with_sha=with_sha)
    traceset_id = created["tracesetId"]
    targets: dict[str, dict[str, Any]] = {t["name"]: t for t in created["uploads"]}
    send(targets["rank1.json"], BESIDE)
    target = targets["rank0.json"]
    sent = put(target["url"], wrong_for(with_sha), target["headers"])
    # Refused on arrival (the service's 400, S3's 400 or 403), or kept by a store that
    # checks neither size nor digest.
    assert sent.status_code in (200, 400, 403), sent.text

    done = api.post(f"/api/v1/tracesets/{traceset_id}/complete")
    assert done.status_code == 409, done.text
    [problem] = problems(done)
    assert problem["member"] == "files[0]" and problem["value"] == "rank0.json", problem
    if sent.status_code == 200:  # kept until complete, which names what it found
        found = "arrived with sha256" if with_sha else f"arrived with {len(RIGHT) + 1:,} bytes"
        assert found in problem["message"], problem
    else:
        assert "has not been received" in problem["message"], problem

    status = api.get(f"/api/v1/tracesets/{traceset_id}/uploads")
    assert status.status_code == 200, status.text
    assert status.json()["received"] == ["rank1.json"]
    [again] = status.json()["uploads"]
    assert again["name"] == "rank0.json"
    resent = put(
        (again if url == "a re-issued URL" else target)["url"],
        RIGHT,
        (again if url == "a re-issued URL" else target)["headers"],
    )
    assert resent.status_code == 200, resent.text

    done = api.post(f"/api/v1/tracesets/{traceset_id}/complete")
    assert done.status_code == 200, done.text
    assert done.json()["status"] == "ready"
    by_name = {f["name"]: f for f in done.json()["files"]}
    for name, data in (("rank0.json", RIGHT), ("rank1.json", BESIDE)):
        assert by_name[name]["sha256"] == hashlib.sha256(data).hexdigest()
        got = api.get(f"/api/v1/tracesets/{traceset_id}/files/{name}", follow_redirects=True)
        assert got.status_code == 200 and got.content == data, name
