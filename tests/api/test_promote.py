"""Promotion over HTTP: the contract's route, its guard, all-or-nothing, and concurrency."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx

from tests.flows import inspected, problems, request_urls, upload
from tracesets.service.catalog import NOT_FINISHED

DECLARED = {"shape": {"rankCount": 8}, "parallelism": {"dp": 4, "tp": 2}}


def promote(api: httpx.Client, traceset_id: str, body: Any = None) -> httpx.Response:
    return api.post(f"/api/v1/tracesets/{traceset_id}/promote", json={} if body is None else body)


def test_promote_a_ready_traceset_with_its_stored_metadata(api: httpx.Client) -> None:
    traceset = upload(api, {"a": b"x"}, DECLARED)
    # The answer repeats what a finished inspection found (here: "a" is no trace), so
    # it is awaited: otherwise the answer depends on whether it finished first.
    found = inspected(api, traceset["id"])["inspection"]["warnings"]
    assert found
    answer = promote(api, traceset["id"])
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["status"] == "promoted" and body["promotedAt"] is not None
    assert body["warnings"] == found, "the stored metadata itself draws no warning"
    assert body["workloadMetadata"] == DECLARED
    assert api.get(f"/api/v1/tracesets/{traceset['id']}").json()["status"] == "promoted"


def test_promote_with_new_metadata_replaces_the_stored_object(api: httpx.Client) -> None:
    traceset = upload(api, {"a": b"x"}, DECLARED)
    new = {"workload_family": "llama", "shape": {"rankCount": 8, "global_batch_size": 512}}
    answer = promote(api, traceset["id"], {"workloadMetadata": new})
    assert answer.status_code == 200, answer.text
    stored = api.get(f"/api/v1/tracesets/{traceset['id']}").json()
    assert stored["workloadMetadata"] == new and stored["rankCountDerived"] == 8
    listed = api.get("/api/v1/tracesets", params={"workload_family": "llama"}).json()["items"]
    assert [t["id"] for t in listed] == [traceset["id"]]


def test_pending_traceset_cannot_be_promoted(api: httpx.Client) -> None:
    created = request_urls(api, {"a": b"x"}, DECLARED)
    answer = promote(api, created["tracesetId"])
    assert answer.status_code == 409 and problems(answer)[0]["member"] == "status"


def test_promoting_again_is_allowed(api: httpx.Client) -> None:
    traceset = upload(api, {"a": b"x"}, DECLARED)
    assert promote(api, traceset["id"]).status_code == 200
    assert (
        promote(api, traceset["id"], {"workloadMetadata": {"shape": {"rankCount": 8}}}).status_code
        == 200
    )


def test_rank_count_guard_refuses_a_changed_count_and_changes_nothing(api: httpx.Client) -> None:
    traceset = upload(api, {"a": b"x"}, DECLARED)
    answer = promote(api, traceset["id"], {"workloadMetadata": {"shape": {"rankCount": 16}}})
    assert answer.status_code == 400
    assert problems(answer)[0]["member"] == "workloadMetadata.shape.rankCount"
    after = api.get(f"/api/v1/tracesets/{traceset['id']}").json()
    assert after["status"] == "ready" and after["workloadMetadata"] == DECLARED


def test_snake_case_rank_count_is_not_a_declaration_for_the_guard(api: httpx.Client) -> None:
    traceset = upload(api, {"a": b"x"}, DECLARED)
    answer = promote(api, traceset["id"], {"workloadMetadata": {"shape": {"rank_count": 8}}})
    assert answer.status_code == 400


def test_every_promotion_problem_is_reported_together(api: httpx.Client) -> None:
    traceset = upload(api, {"a": b"x"}, DECLARED)
    bad = {
        "workload_family": 7,
        "parallelism": {"dp": 4, "tp": 2, "cp": 2.0, "fsdp": 3},
        "shape": {"rankCount": 8, "rank_count": 6, "global_batch_size": "512"},
    }
    members = {
        p["member"] for p in problems(promote(api, traceset["id"], {"workloadMetadata": bad}))
    }
    assert {
        "workloadMetadata.workload_family",
        "workloadMetadata.parallelism.cp",
        "workloadMetadata.parallelism.fsdp",
        "workloadMetadata.shape.rank_count",
        "workloadMetadata.shape.global_batch_size",
    } <= members


def test_stored_metadata_unchecked_at_upload_can_fail_promotion(api: httpx.Client) -> None:
    traceset = upload(
        api, {"a": b"x"}, {"shape": {"rankCount": 8}, "parallelism": {"dp": 8, "cp": 1.5}}
    )
    answer = promote(api, traceset["id"])
    assert answer.status_code == 400
    assert problems(answer)[0]["member"] == "workloadMetadata.parallelism.cp"


def test_camel_case_descriptive_members_come_back_as_warnings(api: httpx.Client) -> None:
    traceset = upload(api, {"a": b"x"}, {"shape": {"rankCount": 8}, "workloadFamily": "llama"})
    answer = promote(api, traceset["id"])
    assert answer.status_code == 200
    assert any("workloadFamily" in w and "workload_family" in w for w in answer.json()["warnings"])


def test_promote_body_must_be_an_object_without_unknown_members(api: httpx.Client) -> None:
    traceset = upload(api, {"a": b"x"}, DECLARED)
    assert promote(api, traceset["id"], []).status_code == 400
    assert problems(promote(api, traceset["id"], {"metadata": {}}))[0]["member"] == "metadata"


def test_promote_other_workspace_or_unknown_is_404(api: httpx.Client) -> None:
    assert promote(api, "0" * 32).status_code == 404


def test_two_concurrent_promotions_leave_exactly_one_whole(api: httpx.Client) -> None:
    traceset = upload(api, {"a": b"x"}, DECLARED)
    one = {"workload_name": "one", "shape": {"rankCount": 8}, "pad": ["a"] * 500}
    two = {"workload_name": "two", "parallelism": {"dp": 8}, "pad": ["b"] * 500}
    with ThreadPoolExecutor(max_workers=2) as pool:
        answers = list(
            pool.map(lambda m: promote(api, traceset["id"], {"workloadMetadata": m}), [one, two])
        )
    assert [a.status_code for a in answers] == [200, 200]
    stored = api.get(f"/api/v1/tracesets/{traceset['id']}").json()["workloadMetadata"]
    assert stored in (one, two)


def test_promotion_says_when_the_traces_are_still_being_inspected(api: httpx.Client) -> None:
    """Right after complete the inspection may or may not have finished; the answer is
    consistent either way: the note exactly while its own inspection is pending."""
    traceset = upload(api, {"a": b"x"}, DECLARED)
    body = promote(api, traceset["id"]).json()
    pending = body["inspection"]["status"] == "pending"
    assert (NOT_FINISHED in body["warnings"]) == pending
    if not pending:
        assert body["warnings"] == body["inspection"]["warnings"]
