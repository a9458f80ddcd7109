"""The per-rank chart, from an inspection spliced into the service's own answer.

GET /api/v1/tracesets/{id} gains ``inspection`` soon; until then the browser's request is
answered by the real service and the member is added to its text, which keeps every
other byte (and so the metadata's literals) as the service sent it.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
from playwright.sync_api import Route, expect

from tests.web.browser import NARROW, Tab
from tests.web.seed import DECLARED_8, upload_text

MiB = 1024 * 1024


def inspected_file(rank: int | None, size: int, name: str) -> dict[str, Any]:
    return {
        "file": "traces.zip",
        "member": name,
        "format": "kineto-json",
        "size": size,
        "rank": rank,
        "worldSize": 8,
        "backend": "nccl",
        "rankSource": "distributedInfo",
        "problem": None if rank is not None else "no distributedInfo",
    }


#: Eight ranks: 3 and 5 missing, 2 in two files, one file without a rank.
INSPECTION: dict[str, Any] = {
    "status": "done",
    "ranksFound": [0, 1, 2, 4, 6, 7],
    "worldSize": 8,
    "missingRanks": [3, 5],
    "duplicateRanks": [2],
    "unreadable": ["traces/notes.bin"],
    "warnings": ["rank 2 appears in 2 files"],
    "files": [
        inspected_file(0, 4 * MiB, "rank0.json"),
        inspected_file(1, 3 * MiB, "rank1.json"),
        inspected_file(2, 1 * MiB, "rank2.json"),
        inspected_file(2, 1 * MiB, "rank2-again.json"),
        inspected_file(4, 2 * MiB, "rank4.json"),
        inspected_file(6, 8 * MiB, "rank6.json"),
        inspected_file(7, 1 * MiB, "rank7.json"),
        inspected_file(None, 100, "notes.json"),
    ],
}


def with_inspection(tab: Tab, traceset_id: str, inspection: dict[str, Any] | None) -> None:
    def splice(route: Route) -> None:
        answer = route.fetch()
        text = answer.text()
        assert text.endswith("}")
        route.fulfill(
            response=answer, body=text[:-1] + ',"inspection":' + json.dumps(inspection) + "}"
        )

    tab.page.route(f"**/api/v1/tracesets/{traceset_id}", splice)


def test_one_bar_per_rank_with_gaps_for_missing_ranks(tab: Tab, api: httpx.Client) -> None:
    traceset_id = upload_text(api, DECLARED_8, name="inspected")["tracesetId"]
    with_inspection(tab, traceset_id, INSPECTION)
    tab.sign_in()
    tab.open_traceset("inspected")
    chart = tab.page.locator("#inspection svg.rank-chart")
    expect(chart).to_be_visible()
    bars = chart.locator("rect.bar")
    expect(bars).to_have_count(6)
    assert [bars.nth(i).get_attribute("data-rank") for i in range(6)] == [
        "0",
        "1",
        "2",
        "4",
        "6",
        "7",
    ]
    gaps = chart.locator("rect.gap")
    assert [gaps.nth(i).get_attribute("data-rank") for i in range(gaps.count())] == ["3", "5"]

    heights = {
        bars.nth(i).get_attribute("data-rank"): float(bars.nth(i).get_attribute("height") or 0)
        for i in range(6)
    }
    assert max(heights, key=lambda rank: heights[rank]) == "6"  # the 8 MiB rank is tallest
    assert heights["6"] == 2 * heights["0"] == 4 * heights["4"]
    assert heights["2"] == heights["4"]  # two 1 MiB files on rank 2 add up
    expect(chart.locator('rect.bar[data-rank="2"]')).to_have_class("bar duplicate")
    expect(chart.locator('rect.bar[data-rank="6"] title')).to_have_text("rank 6: 8.4 MB")

    section = tab.page.locator("#inspection")
    expect(section).to_contain_text("Missing ranks")
    expect(section).to_contain_text("3, 5")
    expect(section).to_contain_text("0–2, 4, 6–7")
    expect(section).to_contain_text("rank 2 appears in 2 files")
    expect(section).to_contain_text("traces/notes.bin")
    assert tab.page.locator("style, [style]").count() == 0
    tab.shoot("rank-chart")


def test_the_chart_fits_a_narrow_screen(tab: Tab, api: httpx.Client) -> None:
    traceset_id = upload_text(api, DECLARED_8, name="narrow chart")["tracesetId"]
    with_inspection(tab, traceset_id, INSPECTION)
    tab.page.set_viewport_size(NARROW)
    tab.sign_in()
    tab.open_traceset("narrow chart")
    chart = tab.page.locator("#inspection svg.rank-chart")
    expect(chart).to_be_visible()
    box = chart.bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390
    assert tab.page.evaluate("() => document.documentElement.scrollWidth") <= 390


def test_a_pending_inspection_says_so_and_none_shows_nothing(tab: Tab, api: httpx.Client) -> None:
    pending_id = upload_text(api, DECLARED_8, name="being inspected")["tracesetId"]
    plain_id = upload_text(api, DECLARED_8, name="not inspected")["tracesetId"]
    with_inspection(tab, pending_id, {**INSPECTION, "status": "pending", "files": []})
    with_inspection(tab, plain_id, None)
    tab.sign_in()
    tab.open_traceset("being inspected")
    expect(tab.page.locator("#inspection")).to_contain_text("being inspected")
    expect(tab.page.locator("#inspection svg")).to_have_count(0)
    tab.page.get_by_role("link", name="← All tracesets").click()
    tab.open_traceset("not inspected")
    expect(tab.page.locator("#inspection")).to_have_count(0)


def test_two_billion_declared_ranks_draw_at_most_512_bars(tab: Tab, api: httpx.Client) -> None:
    traceset_id = upload_text(api, DECLARED_8, name="huge world")["tracesetId"]
    world = 2_147_483_647
    huge = {
        **INSPECTION,
        "worldSize": world,
        "ranksFound": [0, 1, 2, 3],
        "missingRanks": list(range(4, 4 + 65_536)),  # the service lists the first 65,536
        "missingRankCount": world - 4,
        "duplicateRanks": [],
        "files": [inspected_file(rank, MiB, f"rank{rank}.json") for rank in range(4)],
    }
    with_inspection(tab, traceset_id, huge)
    tab.sign_in()
    tab.open_traceset("huge world")
    chart = tab.page.locator("#inspection svg.rank-chart")
    expect(chart).to_be_visible()
    per = int(chart.get_attribute("data-ranks-per-bar") or 0)
    assert per == -(-world // 512)
    expect(chart.locator("rect.bar")).to_have_count(1)
    expect(chart.locator("rect.bar")).to_have_class("bar partial")
    expect(chart.locator("rect.gap")).to_have_count(1)  # one run of 511 bars with no file
    expect(tab.page.locator("#inspection")).to_contain_text("and 2,147,418,107 more")
    tab.shoot("rank-chart-huge")


def test_a_shortened_inspection_draws_unlisted_ranks_apart_from_missing_ones(
    tab: Tab, api: httpx.Client
) -> None:
    traceset_id = upload_text(api, DECLARED_8, name="100k ranks")["tracesetId"]
    world = 100_000
    listed = [r for r in range(1_500) if r != 17]
    shortened = {
        **INSPECTION,
        "worldSize": world,
        "ranksFound": listed,  # cut short too
        "missingRanks": [17, 50_000],
        "missingRankCount": 2,
        "duplicateRanks": [],
        "truncated": True,
        "files": [inspected_file(rank, MiB, f"rank{rank}.json") for rank in listed],
    }
    with_inspection(tab, traceset_id, shortened)
    tab.sign_in()
    tab.open_traceset("100k ranks")
    chart = tab.page.locator("#inspection svg.rank-chart")
    expect(chart).to_be_visible()
    per = -(-world // 512)
    assert chart.get_attribute("data-ranks-per-bar") == str(per)
    # The ranks past the last one listed are one run, drawn as not listed, not as gaps.
    expect(chart.locator("rect.gap")).to_have_count(0)
    unlisted = chart.locator("rect.unlisted")
    expect(unlisted).to_have_count(1)
    first_unlisted = (1_499 // per + 1) * per
    assert unlisted.get_attribute("data-rank") == str(first_unlisted)
    assert unlisted.get_attribute("data-last-rank") == str(world - 1)
    expect(chart.locator("rect.bar")).to_have_count(1_499 // per + 1)
    expect(chart.locator("rect.bar.partial")).to_have_count(1)  # rank 17's
    # The two missing ranks the inspection names, each marked in its bar.
    marks = chart.locator("rect.missing-mark")
    expect(marks).to_have_count(2)
    assert [marks.nth(i).get_attribute("data-ranks") for i in range(2)] == ["17", "50000"]
    expect(tab.page.locator("#inspection")).to_contain_text(
        "lists the files of its first ranks only"
    )
