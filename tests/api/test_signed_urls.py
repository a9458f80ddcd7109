"""The service's own signed URLs (files in its data folder): HMAC, expiry, byte checks.

These run against a service that keeps files locally whatever the run's database, so
they run in every configuration. With S3 the bucket checks its presigned URLs itself;
the backend-neutral tests in test_upload.py cover what the service checks on complete.
"""

from __future__ import annotations

import os
import time
from datetime import datetime
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlsplit, urlunsplit

import httpx

from tests.flows import problems, put, request_urls, upload
from tests.server import FRESH_CONNECTIONS, ServerProcess
from tracesets.api.blobs import BLOB_ROUTE
from tracesets.storage.signing import URLSigner


def test_put_with_wrong_byte_count_is_refused_and_nothing_kept(
    local_server: ServerProcess, local_api: httpx.Client
) -> None:
    created = request_urls(local_api, {"a": b"12345"}, with_sha=False)
    url = created["uploads"][0]["url"]
    short = put(url, b"1234")
    assert short.status_code == 400 and "4 bytes" in problems(short)[0]["message"]
    long = put(url, b"123456")
    assert long.status_code == 400
    got = local_api.get(f"/api/v1/tracesets/{created['tracesetId']}").json()
    assert got["files"][0]["received"] is False
    assert local_api.post(f"/api/v1/tracesets/{created['tracesetId']}/complete").status_code == 409
    assert not list((local_server.data_dir / "blobs").glob(f"{created['tracesetId']}/*"))
    assert not list((local_server.data_dir / "tmp").iterdir()), "no partial file is left behind"


def test_put_with_wrong_sha256_is_refused(local_api: httpx.Client) -> None:
    created = request_urls(local_api, {"a": b"right"})
    answer = put(created["uploads"][0]["url"], b"wrong")
    assert answer.status_code == 400 and "sha256" in problems(answer)[0]["message"]
    got = local_api.get(f"/api/v1/tracesets/{created['tracesetId']}").json()
    assert got["files"][0]["received"] is False


def test_other_bytes_after_complete_are_refused(local_api: httpx.Client) -> None:
    created = request_urls(local_api, {"a": b"same"}, with_sha=False)
    url = created["uploads"][0]["url"]
    assert put(url, b"same").status_code == 200
    assert local_api.post(f"/api/v1/tracesets/{created['tracesetId']}/complete").status_code == 200
    assert put(url, b"same").status_code == 200, "the same bytes again are harmless"
    assert put(url, b"diff").status_code == 409, "other bytes are refused"
    path = f"/api/v1/tracesets/{created['tracesetId']}/files/a"
    assert local_api.get(path, follow_redirects=True).content == b"same"


def test_altered_signed_url_is_forbidden(local_api: httpx.Client) -> None:
    created = request_urls(local_api, {"a": b"x", "b": b"y"})
    url_a, url_b = (u["url"] for u in created["uploads"])
    sig_a = url_a.split("signature=")[1]
    tampered = url_a[:-1] + ("0" if url_a[-1] != "0" else "1")
    assert put(tampered, b"x").status_code == 403
    other_file = url_b.split("signature=")[0] + "signature=" + sig_a
    assert put(other_file, b"y").status_code == 403, "a URL's signature is for its own file only"
    later = url_a.replace("expires=", "expires=9")
    assert put(later, b"x").status_code == 403, "the expiry is signed"
    unsigned = url_a.split("?")[0]
    assert put(unsigned, b"x").status_code == 403


def test_expired_signed_url_is_forbidden(tmp_path: Path) -> None:
    """An upload URL lives TRACESETS_UPLOAD_URL_TTL seconds; past that it is refused.

    Rather than wait for the URL to expire, the test signs its resource with the
    service's own secret for a moment already gone (the URL as it will be after its
    TTL): the same check, with no test waiting on the clock or racing it.
    """
    ttl = 60
    short = ServerProcess(
        tmp_path / "svc", extra_env={"TRACESETS_UPLOAD_URL_TTL": str(ttl)}, local_files=True
    )
    short.start()
    try:
        with httpx.Client(
            base_url=short.url,
            headers={"Authorization": f"Bearer {short.token}"},
            timeout=60,
            limits=FRESH_CONNECTIONS,
        ) as api:
            before = int(time.time())
            created = request_urls(api, {"a": b"x"})
            after = int(time.time())
        [target] = created["uploads"]
        parts = urlsplit(target["url"])
        expires = int(parse_qs(parts.query)["expires"][0])
        assert before + ttl <= expires <= after + ttl, "the URL lives the TTL set"
        assert datetime.fromisoformat(target["expiresAt"]).timestamp() == expires
        assert put(target["url"], b"x").status_code == 200, "within its TTL it works"

        resource = parts.path.removeprefix(f"{BLOB_ROUTE}/")
        gone = before - 1  # before the URL was even issued: expired whatever the clock says
        signer = URLSigner(short.env["TRACESETS_SECRET"].encode())
        query = urlencode({"expires": gone, "signature": signer.signature("PUT", resource, gone)})
        answer = put(urlunsplit(parts._replace(query=query)), b"x")
        assert answer.status_code == 403 and "expired" in problems(answer)[0]["message"]
    finally:
        short.stop()


def test_signed_download_url_is_checked(local_api: httpx.Client) -> None:
    data = os.urandom(300_000)
    traceset = upload(local_api, {"ranks/rank0.json": data})
    location = local_api.get(f"/api/v1/tracesets/{traceset['id']}/files/ranks/rank0.json").headers[
        "location"
    ]
    assert "signature=" in location
    assert httpx.get(location, timeout=60).content == data
    assert (
        httpx.get(location[:-1] + ("0" if location[-1] != "0" else "1"), timeout=60).status_code
        == 403
    )
    assert httpx.put(location, content=data, timeout=60).status_code == 403, (
        "a download URL does not upload"
    )


def _split(url: str) -> tuple[str, str, str]:
    """A signed URL's path and its expires and signature values, as sent."""
    path, query = url.split("?")
    expires, signature = (pair.split("=")[1] for pair in query.split("&"))
    return path, expires, signature


def test_malformed_signature_parameters_are_403_never_5xx(local_api: httpx.Client) -> None:
    created = request_urls(local_api, {"a": b"x"})
    url = created["uploads"][0]["url"]
    path, expires, signature = _split(url)
    bad = {
        "a Unicode superscript two (isdigit, not int)": f"expires=%C2%B2&signature={signature}",
        "Arabic-Indic digits": f"expires=%D9%A1%D9%A2&signature={signature}",
        "5,000 digits (beyond int's digit limit)": f"expires={'9' * 5000}&signature={signature}",
        "a sign": f"expires=%2B{expires}&signature={signature}",
        "a fraction": f"expires={expires}.0&signature={signature}",
        "empty": f"expires=&signature={signature}",
        "a non-ASCII signature": f"expires={expires}&signature=%C3%A9",
        "a short signature": f"expires={expires}&signature={signature[:-1]}",
        "a long signature": f"expires={expires}&signature={signature}0",
        "a 5,000-character signature": f"expires={expires}&signature={'a' * 5000}",
    }
    for why, query in bad.items():
        for method in ("PUT", "GET"):
            answer = httpx.request(
                method,
                f"{path}?{query}",
                content=b"x" if method == "PUT" else None,
                timeout=60,
            )
            assert answer.status_code == 403, f"{method} with {why}: {answer.status_code}"
            assert problems(answer)[0]["member"] == "signature"
    got = local_api.get(f"/api/v1/tracesets/{created['tracesetId']}").json()
    assert got["files"][0]["received"] is False
    assert put(url, b"x").status_code == 200, "the URL as signed still works"


def test_only_the_canonical_spelling_of_a_signed_url_is_accepted(local_api: httpx.Client) -> None:
    """``expires=0…``, an index of ``00``, ``+0`` or ``0.0`` name the same numbers, not the same URL."""
    traceset = upload(local_api, {"a": b"first"}, with_sha=False)
    created = request_urls(local_api, {"a": b"first"}, with_sha=False)
    upload_url = created["uploads"][0]["url"]
    download_url = local_api.get(f"/api/v1/tracesets/{traceset['id']}/files/a").headers["location"]
    for method, url in (("PUT", upload_url), ("GET", download_url)):
        path, expires, signature = _split(url)
        query = url.split("?")[1]
        folder, index = path.rsplit("/", 1)
        assert index == "0"
        variants = {
            "a leading zero in expires": f"{path}?expires=0{expires}&signature={signature}",
            "leading zeros in expires": f"{path}?expires=000{expires}&signature={signature}",
            "an uppercase signature": f"{path}?expires={expires}&signature={signature.upper()}",
        }
        for index_text in ("00", "+0", "0.0", "%2B0", "-0", "%D9%A0", "0x0", " 0", "%200"):
            variants[f"index {index_text}"] = f"{folder}/{index_text}?{query}"
        for why, variant in variants.items():
            answer = httpx.request(
                method, variant, content=b"first" if method == "PUT" else None, timeout=60
            )
            assert answer.status_code == 403, f"{method} with {why}: {answer.status_code}"
            problems(answer)
        body = None if method == "GET" else b"first"
        assert httpx.request(method, url, content=body, timeout=60).status_code == 200, (
            "as signed: accepted"
        )
    got = local_api.get(f"/api/v1/tracesets/{created['tracesetId']}").json()
    assert got["files"][0]["received"] is True
