"""Promotion from the page: refusals under their members, in the service's words; then success."""

from __future__ import annotations

import json
from typing import Any

import httpx
from playwright.sync_api import Locator, expect

from tests.web.browser import Tab
from tests.web.seed import DECLARED_8, upload_text

BAD = (
    '{"workload_family": 7, "precision": "bf16",\n'
    ' "shape": {"rankCount": 16, "global_batch_size": "512"},\n'
    ' "parallelism": {"dp": 4, "tp": 2, "fsdp": 3}}'
)
GOOD = (
    '{"workload_family": "llama", "precision": "bf16", "lr": 0.1000000000000000000001,\n'
    ' "shape": {"rankCount": 8, "global_batch_size": 512},\n'
    ' "parallelism": {"dp": 4, "tp": 2, "fsdp": 2}}'
)


def refused_by_the_service(api: httpx.Client, traceset_id: str, metadata: str) -> list[Any]:
    """What the service itself says about ``metadata`` (a refusal changes nothing)."""
    answer = api.post(
        f"/api/v1/tracesets/{traceset_id}/promote",
        content=b'{"workloadMetadata": ' + metadata.encode() + b"}",
        headers={"Content-Type": "application/json"},
    )
    assert answer.status_code == 400, answer.text
    errors: list[Any] = answer.json()["errors"]
    return errors


def promote_requests(tab: Tab) -> int:
    return sum(1 for r in tab.requests if r.url.endswith("/promote"))


def test_bad_metadata_shows_every_problem_by_its_member_then_fixed_it_promotes(
    tab: Tab, api: httpx.Client
) -> None:
    traceset_id = upload_text(api, DECLARED_8, name="gpt 8 ranks")["tracesetId"]
    expected = refused_by_the_service(api, traceset_id, BAD)
    assert len(expected) >= 4
    tab.sign_in()
    tab.open_traceset("gpt 8 ranks")
    page = tab.page

    page.get_by_role("button", name="Edit metadata").click()
    editor = page.get_by_label("Workload metadata to promote with (JSON)")
    expect(editor).to_be_focused()
    editor.fill(BAD)
    page.get_by_role("button", name="Promote with this metadata").click()

    refusal = page.locator(".refusal")
    expect(refusal.get_by_role("heading")).to_have_text(f"Not promoted: {len(expected)} problems")
    notes = refusal.locator(".problem")
    expect(notes).to_have_count(len(expected))
    for error in expected:
        note = refusal.locator(f'.problem[data-member="{error["member"]}"]')
        expect(note.locator(".problem-message")).to_have_text(error["message"])
        # Right under the line that holds the member: the nearest line above it is flagged
        # and names that member.
        line = note.locator("xpath=preceding-sibling::div[contains(@class, 'aline')][1]")
        expect(line).to_have_attribute("data-path", error["member"])
        expect(line).to_have_class("aline flagged")
    tab.shoot("promote-refused")
    assert api.get(f"/api/v1/tracesets/{traceset_id}").json()["status"] == "ready"

    editor.fill(GOOD)
    page.get_by_role("button", name="Promote with this metadata").click()
    expect(page.locator(".notice.success")).to_contain_text("Promoted.")
    expect(page.locator(".title-row .badge")).to_have_text("promoted")
    expect(page.locator("#metadata-json")).to_contain_text('"lr": 0.1000000000000000000001')
    expect(page.locator("#fact-rank-count")).to_have_text("8")
    tab.shoot("promoted")

    stored = api.get(f"/api/v1/tracesets/{traceset_id}")
    assert stored.json()["status"] == "promoted"
    assert '"lr":0.1000000000000000000001' in stored.text.replace(" ", "")


def test_stored_metadata_refused_then_edited_in_place(tab: Tab, api: httpx.Client) -> None:
    metadata = '{"workload_family": 7, "shape": {"rankCount": 8}, "parallelism": {}}'
    traceset_id = upload_text(api, metadata, name="typed wrong")["tracesetId"]
    expected = refused_by_the_service(api, traceset_id, metadata)
    tab.sign_in()
    tab.open_traceset("typed wrong")
    page = tab.page
    page.get_by_role("button", name="Promote", exact=True).click()
    refusal = page.locator(".refusal")
    for error in expected:
        expect(refusal.locator(f'.problem[data-member="{error["member"]}"]')).to_contain_text(
            error["message"]
        )
    page.locator(".refusal").get_by_role("button", name="Edit the metadata").click()
    editor = page.get_by_label("Workload metadata to promote with (JSON)")
    expect(editor).to_be_focused()
    editor.fill('{"workload_family": "llama", "shape": {"rankCount": 8}}')
    page.get_by_role("button", name="Promote with this metadata").click()
    expect(page.locator(".notice.success")).to_contain_text("Promoted.")


def edit_and_promote(tab: Tab, metadata: str) -> None:
    editor = tab.page.get_by_label("Workload metadata to promote with (JSON)")
    if not editor.is_visible():
        tab.page.get_by_role("button", name="Edit metadata").click()
    editor.fill(metadata)
    tab.page.get_by_role("button", name="Promote with this metadata").click()


def line_above(tab: Tab, member: str) -> Locator:
    note = tab.page.locator(f'.refusal .problem[data-member="{member}"]')
    return note.locator("xpath=preceding-sibling::div[contains(@class, 'aline')][1]")


def test_problems_of_the_whole_object_or_body_and_of_absent_members(
    tab: Tab, api: httpx.Client
) -> None:
    traceset_id = upload_text(api, DECLARED_8, name="placing problems")["tracesetId"]
    tab.sign_in()
    tab.open_traceset("placing problems")

    # The whole object: on its first line.
    undeclared = '{"shape": {"global_batch_size": 8}}'
    [error] = refused_by_the_service(api, traceset_id, undeclared)
    assert error["member"] == "workloadMetadata"
    edit_and_promote(tab, undeclared)
    expect(line_above(tab, "workloadMetadata")).to_have_attribute("data-path", "workloadMetadata")
    expect(tab.page.locator(".refusal .problem-message")).to_have_text(error["message"])

    # The request body as a whole (a repeated member name): above the listing.
    repeated = '{"shape": {"rankCount": 8}, "a": 1, "a": 2}'
    [error] = refused_by_the_service(api, traceset_id, repeated)
    edit_and_promote(tab, repeated)
    expect(tab.page.locator(".refusal ul.problems li")).to_have_text(error["message"])

    # A member the object does not hold (answer stubbed: no rule of today names one):
    # under its nearest parent that is there.
    stub = {
        "type": "urn:tracesets:problem:invalid-request",
        "title": "Invalid request",
        "status": 400,
        "detail": "shape.rankCount is required here",
        "errors": [
            {
                "member": "workloadMetadata.shape.rankCount",
                "value": None,
                "message": "shape.rankCount is required here",
            }
        ],
    }
    tab.page.route(
        "**/promote",
        lambda route: route.fulfill(
            status=400, content_type="application/problem+json", body=json.dumps(stub)
        ),
    )
    edit_and_promote(tab, '{"shape": {"global_batch_size": 8}}')
    expect(line_above(tab, "workloadMetadata.shape.rankCount")).to_have_attribute(
        "data-path", "workloadMetadata.shape"
    )


def test_text_that_is_not_json_is_caught_before_sending(tab: Tab, api: httpx.Client) -> None:
    upload_text(api, DECLARED_8, name="typo")
    tab.sign_in()
    tab.open_traceset("typo")
    tab.page.get_by_role("button", name="Edit metadata").click()
    tab.page.get_by_label("Workload metadata to promote with (JSON)").fill(
        '{"shape": {"rankCount": 8},\n}'
    )
    tab.page.get_by_role("button", name="Promote with this metadata").click()
    expect(tab.page.locator(".notice.error")).to_contain_text("The metadata is not valid JSON")
    expect(tab.page.locator(".notice.error")).to_contain_text("line 2, column 1")
    assert promote_requests(tab) == 0

    tab.page.get_by_role("button", name="Discard edits").click()
    expect(tab.page.locator("#metadata-json")).to_be_visible()
    expect(tab.page.locator(".notice.error")).to_have_count(0)


def test_a_pending_traceset_cannot_be_promoted_from_the_page(tab: Tab, api: httpx.Client) -> None:
    upload_text(api, DECLARED_8, name="half uploaded", complete=False)
    tab.sign_in()
    tab.open_traceset("half uploaded")
    expect(tab.page.locator("#promote")).to_be_disabled()
    expect(tab.page.get_by_text("upload is not complete")).to_be_visible()
    expect(tab.page.locator("table.files tbody tr").first).to_contain_text("not yet")
