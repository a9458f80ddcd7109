"""The list: newest first, filters combined with AND, cursor pages, limits checked."""

from __future__ import annotations

import httpx
import pytest

from tests.flows import problems, request_urls, upload


def ids(api: httpx.Client, **params: object) -> list[str]:
    answer = api.get("/api/v1/tracesets", params=params)  # type: ignore[arg-type]
    assert answer.status_code == 200, answer.text
    return [t["id"] for t in answer.json()["items"]]


def test_newest_first(api: httpx.Client) -> None:
    made = [request_urls(api, {"a": b"x"}, name=f"t{i}")["tracesetId"] for i in range(3)]
    assert ids(api) == made[::-1]


def test_cursor_pages_visit_every_traceset_once(api: httpx.Client) -> None:
    made = [request_urls(api, {"a": b"x"}, name=f"t{i}")["tracesetId"] for i in range(7)]
    seen: list[str] = []
    cursor = None
    pages = 0
    while True:
        params: dict[str, object] = {"limit": 3}
        if cursor:
            params["cursor"] = cursor
        body = api.get("/api/v1/tracesets", params=params).json()  # type: ignore[arg-type]
        seen += [t["id"] for t in body["items"]]
        pages += 1
        cursor = body["nextCursor"]
        if cursor is None:
            break
    assert seen == made[::-1] and pages == 3


def test_status_and_rank_count_filters_combine(api: httpx.Client) -> None:
    ready8 = upload(api, {"a": b"x"}, {"shape": {"rankCount": 8}})["id"]
    pending8 = request_urls(api, {"a": b"x"}, {"shape": {"rankCount": 8}})["tracesetId"]
    ready16 = upload(api, {"a": b"x"}, {"parallelism": {"dp": 4, "tp": 4}})["id"]
    assert ids(api, status="ready") == [ready16, ready8]
    assert ids(api, rank_count=8) == [pending8, ready8]
    assert ids(api, status="ready", rank_count=8) == [ready8]
    assert ids(api, rank_count=16) == [ready16]
    assert ids(api, status="promoted") == []


@pytest.mark.parametrize(
    ("params", "member"),
    [
        ({"limit": 0}, "limit"),
        ({"limit": 501}, "limit"),
        ({"limit": "ten"}, "limit"),
        ({"status": "done"}, "status"),
        ({"rank_count": 0}, "rank_count"),
        ({"rank_count": 2.5}, "rank_count"),
        ({"cursor": "not-a-cursor"}, "cursor"),
    ],
)
def test_bad_list_parameters_are_400(
    api: httpx.Client, params: dict[str, object], member: str
) -> None:
    answer = api.get("/api/v1/tracesets", params=params)  # type: ignore[arg-type]
    assert answer.status_code == 400
    assert problems(answer)[0]["member"] == member


def test_limit_bounds_are_accepted(api: httpx.Client) -> None:
    assert api.get("/api/v1/tracesets", params={"limit": 1}).status_code == 200
    assert api.get("/api/v1/tracesets", params={"limit": 500}).status_code == 200


def test_unknown_parameters_are_400_each_named_with_the_name_meant(api: httpx.Client) -> None:
    answer = api.get(
        "/api/v1/tracesets",
        params={"workloadFamily": "llama", "rankCount": "8", "colour": "red", "status": "ready"},
    )
    assert answer.status_code == 400
    found = {p["member"]: p for p in problems(answer)}
    assert list(found) == ["workloadFamily", "rankCount", "colour"]
    assert found["workloadFamily"]["value"] == "llama"
    assert found["workloadFamily"]["message"].endswith("did you mean workload_family?")
    assert found["rankCount"]["message"].endswith("did you mean rank_count?")
    assert "did you mean" not in found["colour"]["message"]
    assert "workload_family" in found["colour"]["message"]


def test_member_paths_of_the_metadata_suggest_the_filter(api: httpx.Client) -> None:
    answer = api.get("/api/v1/tracesets", params={"workloadMetadata.workload_name": "gpt"})
    assert answer.status_code == 400
    assert problems(answer)[0]["message"].endswith("did you mean workload_name?")


def test_unknown_parameters_without_a_token_are_401(api: httpx.Client) -> None:
    answer = httpx.get(f"{api.base_url}/api/v1/tracesets", params={"colour": "red"})
    assert answer.status_code == 401


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"rank_count": "ten"}, "rank_count must be a whole number"),
        ({"limit": 0}, "limit must be at least 1"),
        ({"limit": 501}, "limit must be at most 500"),
        ({"status": "done"}, "status must be one of 'pending', 'ready' or 'promoted'"),
        ({"inspected_ok": "maybe"}, "inspected_ok must be true or false"),
    ],
)
def test_bad_parameters_are_worded_by_the_service(
    api: httpx.Client, params: dict[str, object], message: str
) -> None:
    answer = api.get("/api/v1/tracesets", params=params)  # type: ignore[arg-type]
    assert answer.status_code == 400
    assert problems(answer)[0]["message"] == message
