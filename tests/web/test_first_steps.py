"""What a new user met on the page: promotion's warnings grouped by kind, duplicated ranks
named, a rank chart readable at any size, filter errors in the service's words, /docs
offline, and sizes written as the command line writes them."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlsplit

import httpx
from playwright.sync_api import Browser, Locator, Route, expect
from rich.filesize import decimal

from tests.flows import inspected, upload
from tests.inspection.kineto_writer import kineto_trace
from tests.web.browser import Tab
from tests.web.seed import DECLARED_8, upload_text
from tests.web.test_rank_chart import inspected_file, with_inspection
from tracesets.service.catalog import NOT_FINISHED
from tracesets.web import CONTENT_SECURITY_POLICY

SPELLING = "Promotion does not read these members because of their spelling:"
TRACES = "What inspecting the traces found:"


def _group(tab: Tab, heading: str) -> Locator:
    """The entries listed under ``heading`` in promotion's answer."""
    group = tab.page.locator(".warning-group", has=tab.page.get_by_role("heading", name=heading))
    return group.locator("li")


def test_promotion_warnings_are_grouped_by_kind(tab: Tab, api: httpx.Client) -> None:
    files = {f"rank{rank}.json": kineto_trace(rank, 8) for rank in (0, 1)}
    metadata = {"shape": {"rankCount": 8}, "workloadFamily": "llama"}
    traceset = upload(api, files, metadata, name="two of eight")
    found = inspected(api, traceset["id"])["inspection"]["warnings"]
    tab.sign_in()
    tab.open_traceset("two of eight")
    tab.page.get_by_role("button", name="Promote", exact=True).click()
    expect(tab.page.locator(".notice.success")).to_contain_text("Promoted.")
    expect(_group(tab, SPELLING)).to_have_text(
        ["workloadMetadata.workloadFamily is not read: promotion reads workload_family"]
    )
    expect(_group(tab, TRACES)).to_have_text(found)
    assert any(w.startswith("6 of 8 declared ranks have no trace") for w in found)


def test_promotion_before_inspection_finished_says_so_under_its_own_heading(
    tab: Tab, api: httpx.Client
) -> None:
    traceset_id = upload_text(api, DECLARED_8, name="just completed")["tracesetId"]

    def still_pending(route: Route) -> None:
        answer = route.fetch()
        body: dict[str, Any] = answer.json()
        assert body["status"] == "promoted"
        body["warnings"] = [NOT_FINISHED]
        body["inspection"] = {**(body["inspection"] or {}), "status": "pending", "warnings": []}
        route.fulfill(response=answer, body=json.dumps(body))

    tab.page.route(f"**/api/v1/tracesets/{traceset_id}/promote", still_pending)
    tab.sign_in()
    tab.open_traceset("just completed")
    tab.page.get_by_role("button", name="Promote", exact=True).click()
    expect(_group(tab, "The traces are still being inspected:")).to_have_text([NOT_FINISHED])
    expect(tab.page.get_by_role("heading", name=SPELLING)).to_have_count(0)


def test_duplicated_ranks_are_named_with_their_files(tab: Tab, api: httpx.Client) -> None:
    files = {"a/rank0.json": kineto_trace(0, 2), "b/rank0.json": kineto_trace(0, 2)}
    files["c/rank0.json"] = kineto_trace(0, 2)
    files["rank1.json"] = kineto_trace(1, 2)
    twice = upload(api, files, {"shape": {"rankCount": 2}}, name="rank 0 thrice")["id"]
    once = upload(api, {"rank0.json": kineto_trace(0, 2)}, {"shape": {"rankCount": 2}})["id"]
    inspected(api, twice)
    inspected(api, once)
    tab.sign_in()
    tab.open_traceset("rank 0 thrice")
    fact = tab.page.locator("#inspection .fact", has_text="Duplicated ranks")
    expect(fact.locator("dd")).to_have_text("rank 0 (3 files)")
    tab.page.get_by_role("link", name="← All tracesets").click()
    tab.open_traceset("a traceset")
    expect(fact.locator("dd")).to_have_text("none")


def _bars(tab: Tab) -> dict[int, float]:
    chart = tab.page.locator("#inspection svg.rank-chart")
    expect(chart).to_be_visible()
    heights: dict[int, float] = tab.page.evaluate(
        """() => Object.fromEntries([...document.querySelectorAll('svg.rank-chart rect.bar')]
              .map((r) => [r.dataset.rank, Number(r.getAttribute('height'))]))"""
    )
    return {int(rank): height for rank, height in heights.items()}


def test_ranks_of_very_different_sizes_are_all_visible(tab: Tab, api: httpx.Client) -> None:
    traceset_id = upload_text(api, DECLARED_8, name="300 ranks")["tracesetId"]
    sizes = {rank: 1_000 * 10 ** (rank % 7) for rank in range(300)}  # 1 kB to 1 GB
    inspection = {
        "status": "done",
        "ranksFound": list(range(300)),
        "worldSize": 300,
        "missingRanks": [],
        "duplicateRanks": [],
        "unreadable": [],
        "warnings": [],
        "files": [inspected_file(r, size, f"rank{r}.json") for r, size in sizes.items()],
    }
    with_inspection(tab, traceset_id, inspection)
    tab.sign_in()
    tab.open_traceset("300 ranks")
    heights = _bars(tab)
    assert len(heights) == 300
    expect(tab.page.locator("svg.rank-chart")).to_have_attribute("data-scale", "log")
    tallest = max(heights.values())
    assert min(heights.values()) >= tallest / 10, "the smallest rank stays readable"
    assert heights[6] == tallest and heights[0] < heights[1] < heights[2]
    labels = tab.page.locator("svg.rank-chart text.axis-label").all_text_contents()
    assert "1.0 GB" in labels and "100.0 kB" in labels


def test_no_rank_found_draws_no_value_axis(tab: Tab, api: httpx.Client) -> None:
    traceset_id = upload_text(api, DECLARED_8, name="no ranks")["tracesetId"]
    inspection = {
        "status": "done",
        "ranksFound": [],
        "worldSize": None,
        "missingRanks": list(range(256)),
        "missingRankCount": 256,
        "duplicateRanks": [],
        "unreadable": [],
        "warnings": ["256 of 256 declared ranks have no trace: 0-255."],
        "files": [inspected_file(None, 100, "notes.json")],
    }
    with_inspection(tab, traceset_id, inspection)
    tab.sign_in()
    tab.open_traceset("no ranks")
    chart = tab.page.locator("#inspection svg.rank-chart")
    expect(chart).to_be_visible()
    assert chart.get_attribute("data-scale") == "none"
    assert not [t for t in chart.locator("text.axis-label").all_text_contents() if "byte" in t]
    expect(chart.locator("rect.bar")).to_have_count(0)


def test_ten_thousand_ranks_draw_at_most_512_bars(tab: Tab, api: httpx.Client) -> None:
    traceset_id = upload_text(api, DECLARED_8, name="10,000 ranks")["tracesetId"]
    inspection = {
        "status": "done",
        "ranksFound": list(range(10_000)),
        "worldSize": 10_000,
        "missingRanks": [],
        "duplicateRanks": [],
        "unreadable": [],
        "warnings": [],
        "files": [inspected_file(r, 1_000 + r, f"rank{r}.json") for r in range(10_000)],
    }
    with_inspection(tab, traceset_id, inspection)
    tab.sign_in()
    tab.open_traceset("10,000 ranks")
    heights = _bars(tab)
    assert 0 < len(heights) <= 512 and min(heights.values()) >= 2


def test_a_refused_filter_is_worded_by_the_service(tab: Tab) -> None:
    tab.sign_in()
    tab.page.get_by_label("Rank count").fill("2.5")
    tab.page.get_by_role("button", name="Apply filters").click()
    expect(tab.page.locator("#filter-rank_count-error")).to_have_text(
        "rank_count must be a whole number"
    )


def test_sizes_are_written_as_the_command_line_writes_them(tab: Tab) -> None:
    sizes = [0, 1, 999, 1_000, 1_500, 999_999, 4_194_304, 10**12, 5 * 2**40]
    tab.open()
    shown = tab.page.evaluate(
        "async (sizes) => { const dom = await import('/static/dom.js');"
        " return sizes.map((size) => dom.formatBytes(size)); }",
        sizes,
    )
    assert shown == [decimal(size) for size in sizes]


def test_docs_render_with_no_internet(browser: Browser, tab: Tab) -> None:
    """Every request that leaves loopback fails, as on a machine without internet."""
    context = browser.new_context()
    left: list[str] = []

    def offline(route: Route) -> None:
        if urlsplit(route.request.url).hostname in ("127.0.0.1", "localhost"):
            route.continue_()
        else:
            left.append(route.request.url)
            route.abort("internetdisconnected")

    context.route("**/*", offline)
    errors: list[str] = []
    try:
        page = context.new_page()
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        answer = page.goto(f"{tab.server.url}/docs")
        assert answer is not None and answer.status == 200
        assert answer.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
        expect(page.locator(".swagger-ui .info .title")).to_contain_text("Tracesets")
        expect(
            page.locator(".opblock-summary-path", has_text="/api/v1/tracesets/upload-url")
        ).to_be_visible()
        icon = page.evaluate("() => document.querySelector('link[rel=icon]').href")
        assert icon == f"{tab.server.url}/static/favicon.svg"
    finally:
        context.close()
    assert left == [] and errors == []
