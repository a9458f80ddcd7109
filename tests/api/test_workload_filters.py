"""The list's workload filters: snake_case members only, exact JSON type, combined with AND."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.api.test_list import ids
from tests.flows import problems, request_urls, upload


def made(api: httpx.Client, metadata: dict[str, Any]) -> str:
    return str(request_urls(api, {"a": b"x"}, {"shape": {"rankCount": 8}} | metadata)["tracesetId"])


def test_workload_family_and_name_match_exactly(api: httpx.Client) -> None:
    llama = made(api, {"workload_family": "llama", "workload_name": "llama-70b"})
    made(api, {"workload_family": "Llama", "workload_name": "llama-70b"})
    gpt = made(api, {"workload_family": "gpt", "workload_name": "gpt-3"})
    assert ids(api, workload_family="llama") == [llama]
    assert ids(api, workload_family="gpt", workload_name="gpt-3") == [gpt]
    assert ids(api, workload_family="gpt", workload_name="llama-70b") == []


def test_camel_case_descriptive_members_are_not_read_by_filters(api: httpx.Client) -> None:
    made(api, {"workloadFamily": "llama"})
    assert ids(api, workload_family="llama") == []


def test_global_batch_size_reads_shape_global_batch_size_integers_only(api: httpx.Client) -> None:
    wanted = str(
        request_urls(api, {"a": b"x"}, {"shape": {"rankCount": 8, "global_batch_size": 512}})[
            "tracesetId"
        ]
    )
    for other in (512.0, "512", 5.12e2, 1024):
        request_urls(api, {"a": b"x"}, {"shape": {"rankCount": 8, "global_batch_size": other}})
    request_urls(api, {"a": b"x"}, {"shape": {"rankCount": 8}, "global_batch_size": 512})
    assert ids(api, global_batch_size=512) == [wanted]


def test_only_string_families_match(api: httpx.Client) -> None:
    made(api, {"workload_family": 5})
    assert ids(api, workload_family="5") == []


def test_workload_filters_combine_with_status_and_rank_count(api: httpx.Client) -> None:
    ready = upload(api, {"a": b"x"}, {"shape": {"rankCount": 8}, "workload_family": "llama"})["id"]
    made(api, {"workload_family": "llama"})
    upload(api, {"a": b"x"}, {"shape": {"rankCount": 16}, "workload_family": "llama"})
    assert ids(api, workload_family="llama", status="ready", rank_count=8) == [ready]


def test_filtered_pages_follow_the_cursor(api: httpx.Client) -> None:
    wanted = [made(api, {"workload_name": "w"}) for _ in range(5)]
    made(api, {"workload_name": "other"})
    first = api.get("/api/v1/tracesets", params={"workload_name": "w", "limit": 3}).json()
    second = api.get(
        "/api/v1/tracesets",
        params={"workload_name": "w", "limit": 3, "cursor": first["nextCursor"]},
    ).json()
    assert [t["id"] for t in first["items"] + second["items"]] == wanted[::-1]
    assert second["nextCursor"] is None


@pytest.mark.parametrize("value", ["0", "-1", "2.5", "big"])
def test_bad_global_batch_size_filter_is_400(api: httpx.Client, value: str) -> None:
    answer = api.get("/api/v1/tracesets", params={"global_batch_size": value})
    assert answer.status_code == 400 and problems(answer)[0]["member"] == "global_batch_size"


def test_combined_filters_find_old_matches_beyond_the_first_candidates(api: httpx.Client) -> None:
    """The lead filter picks candidates in batches; a rare second filter reaches past them."""
    old = [
        upload(api, {"a": b"x"}, {"shape": {"rankCount": 8}, "workload_family": "deep"})["id"]
        for _ in range(3)
    ]
    for _ in range(230):
        made(api, {"workload_family": "deep"})
    first = api.get(
        "/api/v1/tracesets", params={"workload_family": "deep", "status": "ready", "limit": 2}
    ).json()
    second = api.get(
        "/api/v1/tracesets",
        params={
            "workload_family": "deep",
            "status": "ready",
            "limit": 2,
            "cursor": first["nextCursor"],
        },
    ).json()
    assert [t["id"] for t in first["items"] + second["items"]] == old[::-1]
    assert second["nextCursor"] is None


def test_the_members_dotted_spelling_is_the_same_filter(api: httpx.Client) -> None:
    wanted = made(api, {"shape": {"rankCount": 8, "global_batch_size": 512}})
    made(api, {"shape": {"rankCount": 8, "global_batch_size": 1024}})
    assert ids(api, **{"shape.global_batch_size": 512}) == [wanted]
    assert ids(api, **{"shape.global_batch_size": 512, "global_batch_size": 512}) == [wanted]


def test_both_spellings_with_different_values_are_400(api: httpx.Client) -> None:
    answer = api.get(
        "/api/v1/tracesets", params={"shape.global_batch_size": 512, "global_batch_size": 1024}
    )
    assert answer.status_code == 400
    assert problems(answer)[0]["member"] == "shape.global_batch_size"
