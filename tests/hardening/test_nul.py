"""U+0000 wherever a request can carry it: refused (400) or unknown (404), never a 5xx.

PostgreSQL cannot store or even compare text holding U+0000, so each of these was a 500
there (SQLite took them). One rule on every backend: names and descriptions refuse it,
as file names always did; an id holding it names no traceset; a filter holding it is
refused. (U+0000 inside workloadMetadata: test_roundtrip.py.)
"""

from __future__ import annotations

import httpx
import pytest

from tests.flows import RANKS_8

FILES = [{"name": "rank0.json", "size": 1, "role": "primary"}]


@pytest.mark.parametrize(
    ("member", "body"),
    [
        ("name", {"name": "a\x00b", "files": FILES, "workloadMetadata": RANKS_8}),
        (
            "description",
            {"name": "a", "description": "\x00", "files": FILES, "workloadMetadata": RANKS_8},
        ),
        (
            "files[0].name",
            {"name": "a", "files": [{**FILES[0], "name": "\x00"}], "workloadMetadata": RANKS_8},
        ),
    ],
)
def test_nul_in_a_stored_string_is_refused(
    hardening_api: httpx.Client, member: str, body: dict[str, object]
) -> None:
    answer = hardening_api.post("/api/v1/tracesets/upload-url", json=body)
    assert answer.status_code == 400, answer.text
    assert [p["member"] for p in answer.json()["errors"]] == [member]
    assert "NUL" in answer.json()["detail"]


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/api/v1/tracesets/a%00b"),
        ("GET", "/api/v1/tracesets/%00/uploads"),
        ("GET", "/api/v1/tracesets/%00/files/rank0.json"),
        ("POST", "/api/v1/tracesets/%00/complete"),
        ("POST", "/api/v1/tracesets/%00/promote"),
        ("DELETE", "/api/v1/tracesets/%00"),
    ],
)
def test_an_id_holding_nul_names_no_traceset(
    hardening_api: httpx.Client, method: str, path: str
) -> None:
    answer = hardening_api.request(method, path, json={} if method == "POST" else None)
    assert answer.status_code == 404, answer.text


@pytest.mark.parametrize("member", ["workload_family", "workload_name"])
def test_a_filter_holding_nul_is_refused(hardening_api: httpx.Client, member: str) -> None:
    answer = hardening_api.get("/api/v1/tracesets", params={member: "llama\x00"})
    assert answer.status_code == 400, answer.text
    assert answer.json()["errors"][0]["member"] == member
