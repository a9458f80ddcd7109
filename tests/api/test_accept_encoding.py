"""Accept-Encoding read as RFC 9110 §12.5.3 says: q-values, identity and ``*``.

gzip goes out only to a client whose header gives it a q above 0 (by name or by ``*``)
and no lower than identity's; ``gzip;q=0`` refuses it. Both the hot routes (upload-url)
and the others (the list) choose alike.
"""

from __future__ import annotations

import gzip
from typing import Any

import httpx
import pytest

from tests.flows import request_urls, spec

#: (Accept-Encoding, whether a large answer is gzipped).
CHOICES = [
    ("gzip", True),
    ("GZIP", True),
    ("x-gzip", True),
    ("gzip, deflate, br", True),
    ("gzip;q=0", False),
    ("gzip; q=0.000", False),
    ("gzip;q=0, *", False),
    ("deflate, gzip;q=0", False),
    ("*", True),
    ("*;q=0", False),
    ("*;q=0, identity", False),
    ("br", False),
    ("identity", False),
    ("", False),
    ("gzip;q=0.5, identity;q=0.9", False),
    ("gzip;q=0.9, identity;q=0.5", True),
    ("*;q=0.5, identity", False),
    ("gzip;q=2", False),
    ("identity;q=0, gzip", True),
]


def gzipped(api: httpx.Client, method: str, path: str, accept: str, **kw: Any) -> bool:
    """Whether the answer came gzipped (and then is gzip of JSON); it says it varies."""
    with api.stream(method, path, headers={"Accept-Encoding": accept}, **kw) as answer:
        raw = b"".join(answer.iter_raw())
    assert answer.status_code < 300, raw[:300]
    assert "Accept-Encoding" in answer.headers.get_list("vary")
    coding: str | None = answer.headers.get("content-encoding")
    assert coding in (None, "gzip")
    if coding == "gzip":
        assert gzip.decompress(raw).startswith(b"{")
    return coding == "gzip"


@pytest.mark.parametrize(("accept", "expected"), CHOICES)
def test_the_list_is_gzipped_only_when_accept_encoding_accepts_gzip(
    api: httpx.Client, accept: str, expected: bool
) -> None:
    for i in range(8):
        request_urls(api, {"a": b"x"}, name=f"t{i}")
    assert gzipped(api, "GET", "/api/v1/tracesets", accept) is expected


@pytest.mark.parametrize(("accept", "expected"), CHOICES)
def test_upload_url_is_gzipped_only_when_accept_encoding_accepts_gzip(
    api: httpx.Client, accept: str, expected: bool
) -> None:
    body = {
        "name": "many",
        "files": [spec(f"rank{k:03d}.json", b"x") for k in range(40)],
        "workloadMetadata": {"shape": {"rankCount": 40}},
    }
    assert gzipped(api, "POST", "/api/v1/tracesets/upload-url", accept, json=body) is expected


@pytest.mark.parametrize(
    ("path", "accept", "expected"),
    [
        ("/api/v1/whoami", "gzip", False),
        ("/api/v1/whoami", "identity;q=0, gzip", True),
        ("/api/v1/whoami", "*;q=0, gzip;q=0.1", True),
        ("/api/v1/whoami", "identity;q=0", False),
        ("/api/v1/whoami", "*;q=0", False),
    ],
)
def test_a_small_answer_is_gzipped_only_when_identity_is_refused(
    api: httpx.Client, path: str, accept: str, expected: bool
) -> None:
    """Below 1 KiB gzip gains nothing, but a client that refuses identity still gets gzip;
    one that refuses both gets the answer as written (RFC 9110's SHOULD)."""
    assert gzipped(api, "GET", path, accept) is expected
