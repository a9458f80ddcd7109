"""A job of 4,096 ranks on the page: ranks 17 and 3,001 missing, rank 42 in two traces.

Two tracesets of the module's own workspace, made once: the job, its 4,095 tiny traces in
one tar archive, uploaded, completed and inspected by the service; and 4,095 files declared
(not sent, so they cost one request) for the file table. The promotion test runs last, as
it changes the job.
"""

from __future__ import annotations

import io
import json
import secrets
import tarfile
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from playwright.sync_api import expect

from tests.flows import inspected
from tests.server import FRESH_CONNECTIONS, ServerProcess
from tests.web.browser import Tab
from tests.web.seed import tiny_trace, upload_text

WORLD = 4_096
MISSING = (17, 3_001)
TWICE = 42
JOB = "job of 4096 ranks"
DECLARED = "4095 files declared"
#: Rows the file table shows at once (filetable.js).
PAGE_ROWS = 100
#: The rank chart's plot: 240 px less its top and bottom margins (14 + 48).
PLOT_HEIGHT = 240 - 14 - 48
METADATA = '{"shape": {"rankCount": 4096}, "parallelism": {"dp": 512, "tp": 8}}'


def rank_traces() -> dict[str, bytes]:
    traces = {f"rank-{r:04d}.json": tiny_trace(r, WORLD) for r in range(WORLD) if r not in MISSING}
    traces[f"rank-{TWICE:04d}-again.json"] = tiny_trace(TWICE, WORLD)
    return traces


def tar_of(files: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


@pytest.fixture(scope="module")
def workspace_token(server: ServerProcess) -> str:
    return server.new_token("ws-" + secrets.token_hex(6))


@pytest.fixture(scope="module")
def job(server: ServerProcess, workspace_token: str) -> Iterator[dict[str, Any]]:
    """Both tracesets made; the job's GET answer once it is inspected."""
    with httpx.Client(
        base_url=server.url,
        headers={"Authorization": f"Bearer {workspace_token}"},
        timeout=60,
        limits=FRESH_CONNECTIONS,
    ) as api:
        upload_text(api, METADATA, name=DECLARED, files=rank_traces(), complete=False)
        files = {"traces.tar": tar_of(rank_traces())}
        created = upload_text(api, METADATA, name=JOB, files=files)
        yield inspected(api, created["tracesetId"])


def sections(tab: Tab) -> list[str]:
    """The traceset view's parts, top to bottom."""
    found: list[str] = tab.page.evaluate(
        """() => [...document.querySelectorAll('main > .facts, main > section')]
            .map((e) => e.id || e.className)"""
    )
    return found


def rows_in_dom(tab: Tab) -> int:
    count: int = tab.page.evaluate("() => document.querySelectorAll('table.files tr').length")
    return count


def test_the_file_table_shows_a_page_of_rows_below_the_metadata_and_filters_every_file(
    tab: Tab, job: dict[str, Any]
) -> None:
    names = list(rank_traces())
    assert len(names) == 4_095 and job["fileCount"] == 1
    tab.sign_in()
    tab.open_traceset(DECLARED)
    page = tab.page
    rows = page.locator("table.files tbody tr")
    expect(rows).to_have_count(PAGE_ROWS)
    assert rows_in_dom(tab) == PAGE_ROWS + 1  # and the head's
    expect(rows.first).to_contain_text(names[0])
    expect(page.locator("#files-state")).to_have_text(f"Files 1–{PAGE_ROWS} of 4,095.")
    assert sections(tab) == ["facts", "promotion", "files"]
    assert page.evaluate("() => document.documentElement.scrollHeight") < 12_000

    # Paging by keyboard: the next page, past the service's first page of 1,000 files.
    tab.tab_to("#files-next")
    for _ in range(1_000 // PAGE_ROWS):
        page.keyboard.press("Enter")
    expect(rows.first).to_contain_text(names[1_000])
    expect(page.locator("#files-state")).to_have_text("Files 1,001–1,100 of 4,095.")
    assert rows_in_dom(tab) == PAGE_ROWS + 1
    page.get_by_role("button", name="← Previous").click()
    expect(rows.first).to_contain_text(names[900])

    # A filter reads every file, however many pages the service holds them in.
    page.get_by_label("Name contains").fill("rank-40")
    wanted = [n for n in names if "rank-40" in n]
    assert len(wanted) == 96
    expect(rows).to_have_count(len(wanted))
    expect(page.locator("#files-state")).to_have_text("Files 1–96 of 96 matching (of 4,095).")
    expect(rows.last).to_contain_text(wanted[-1])
    expect(page.locator("#files-next")).to_be_disabled()

    page.get_by_label("Name contains").fill("again")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("rank-0042-again.json")

    page.get_by_label("Name contains").fill("rank-5")
    expect(rows).to_have_count(0)
    expect(page.locator("#files-state")).to_have_text("No file matches.")

    page.get_by_label("Name contains").fill("")
    expect(rows).to_have_count(PAGE_ROWS)
    expect(rows.first).to_contain_text(names[0])
    tab.shoot("many-files")


def test_a_page_of_files_the_service_refuses_says_so_and_is_asked_for_again(
    tab: Tab, job: dict[str, Any]
) -> None:
    names = list(rank_traces())
    tab.sign_in()
    tab.open_traceset(DECLARED)
    page = tab.page
    busy = {
        "type": "urn:tracesets:problem:unavailable",
        "title": "Service unavailable",
        "status": 503,
        "detail": "The database is busy; try again.",
    }
    page.route(
        "**/files?*",
        lambda route: route.fulfill(
            status=503, content_type="application/problem+json", body=json.dumps(busy)
        ),
    )
    for _ in range(1_000 // PAGE_ROWS):
        page.get_by_role("button", name="Next →").click()
    problem = page.locator("#files .notice.error")
    expect(problem).to_contain_text("More files could not be shown: The database is busy")
    expect(page.locator("#files-state")).to_have_text(
        "Files 1,001–1,100 of 4,095 could not be read."
    )
    page.unroute("**/files?*")
    problem.get_by_role("button", name="Try again").click()
    rows = page.locator("table.files tbody tr")
    expect(rows.first).to_contain_text(names[1_000])
    expect(rows).to_have_count(PAGE_ROWS)
    expect(problem).to_have_count(0)


def test_the_file_table_shows_and_filters_the_ranks_inspection_found_in_each_file(
    tab: Tab, job: dict[str, Any]
) -> None:
    tab.sign_in()
    tab.open_traceset(JOB)
    page = tab.page
    rows = page.locator("table.files tbody tr")
    expect(rows).to_have_count(1)
    assert sections(tab) == ["facts", "inspection", "compare", "promotion", "files"]
    expect(rows.first.locator('td[data-label="Rank"]')).to_have_text("0–16, 18–3,000, 3,002–4,095")
    rank = page.get_by_label("Rank", exact=True)
    rank.fill(str(TWICE))
    expect(rows).to_have_count(1)
    rank.fill(str(MISSING[1]))
    expect(rows).to_have_count(0)
    expect(page.locator("#files-state")).to_have_text("No file matches.")
    rank.fill("")
    expect(rows).to_have_count(1)


def test_the_rank_chart_marks_the_missing_and_the_duplicated_rank_in_bars_of_eight(
    tab: Tab, job: dict[str, Any]
) -> None:
    inspection = job["inspection"]
    assert inspection["missingRanks"] == list(MISSING)
    assert inspection["duplicateRanks"] == [TWICE]
    tab.sign_in()
    tab.open_traceset(JOB)
    chart = tab.page.locator("#inspection svg.rank-chart")
    expect(chart).to_be_visible()
    assert chart.get_attribute("data-ranks-per-bar") == "8"
    expect(chart.locator("rect.bar")).to_have_count(WORLD // 8)  # no bar is all gap

    missing = chart.locator("rect.missing-mark")
    expect(missing).to_have_count(2)
    assert [missing.nth(i).get_attribute("data-ranks") for i in range(2)] == ["17", "3001"]
    assert [missing.nth(i).get_attribute("data-rank") for i in range(2)] == ["16", "3000"]
    expect(missing.first.locator("title")).to_have_text("ranks 16–23: rank 17 missing")
    for first in ("16", "3000"):
        expect(chart.locator(f'rect.bar[data-rank="{first}"]')).to_have_class("bar partial")
        box = chart.locator(f'rect.missing-mark[data-rank="{first}"]').bounding_box()
        assert box is not None and box["width"] >= 5 and box["height"] >= 6  # visible

    duplicated = chart.locator("rect.duplicate-mark")
    expect(duplicated).to_have_count(1)
    assert duplicated.get_attribute("data-ranks") == "42"
    assert duplicated.get_attribute("data-rank") == "40"

    # Rank 42's two files add up to twice any other rank's: its bar is clipped at the top,
    # and every other bar keeps (nearly) the whole height.
    twice = chart.locator('rect.bar[data-rank="40"]')
    expect(twice).to_have_class("bar duplicate clipped")
    expect(chart.locator('path.clip-marker[data-rank="40"]')).to_have_count(1)
    expect(chart.locator("rect.bar.clipped")).to_have_count(1)
    top = float(chart.get_attribute("data-top") or 0)
    assert float(twice.get_attribute("data-value") or 0) > 1.9 * top
    heights: list[float] = chart.evaluate(
        "(svg) => [...svg.querySelectorAll('rect.bar:not(.clipped)')].map((r) => +r.getAttribute('height'))"
    )
    assert min(heights) > 0.9 * PLOT_HEIGHT, min(heights)
    assert float(twice.get_attribute("height") or 0) == pytest.approx(PLOT_HEIGHT)
    legend = tab.page.locator("#inspection .rank-legend")
    expect(legend).to_contain_text("a missing rank among them")
    expect(legend).to_contain_text("a duplicated rank")
    expect(legend).to_contain_text("clipped")
    tab.shoot("rank-chart-4096")


def test_promote_changes_only_the_status_metadata_and_warnings(
    tab: Tab, job: dict[str, Any]
) -> None:
    tab.sign_in()
    tab.open_traceset(JOB)
    page = tab.page
    page.get_by_label("Name contains").fill("traces")
    expect(page.locator("table.files tbody tr")).to_have_count(1)
    # Every request the view makes of itself is done: the figures of ranks past 256 too.
    expect(page.locator("#figures-caption")).to_contain_text("All 4,095 ranks are shown.")
    page.evaluate(
        """() => { window.kept = {
            chart: document.querySelector('#inspection svg.rank-chart'),
            inspection: document.querySelector('#inspection'),
            table: document.querySelector('table.files'),
            row: document.querySelector('table.files tbody tr'),
            filter: document.querySelector('#files-filter'),
            metadata: document.querySelector('#metadata-json'),
            badge: document.querySelector('.title-row .badge'),
            heading: document.querySelector('h1'),
        }; }"""
    )
    before = len(tab.requests)
    page.get_by_role("button", name="Promote", exact=True).click()
    success = page.locator(".notice.success")
    expect(success).to_contain_text("Promoted.")
    expect(success).to_be_focused()
    expect(success).to_contain_text("What inspecting the traces found:")
    expect(success).to_contain_text("3,001")
    expect(page.locator(".title-row .badge")).to_have_text("promoted")
    expect(page.locator("#fact-promoted time")).to_have_count(1)
    expect(page.get_by_role("button", name="Promote again", exact=True)).to_be_enabled()

    kept: dict[str, bool] = page.evaluate(
        """() => Object.fromEntries(Object.entries(window.kept).map(([k, node]) => [k, node.isConnected]))"""
    )
    assert kept == dict.fromkeys(kept, True), kept
    assert page.evaluate(
        "() => window.kept.row === document.querySelector('table.files tbody tr')"
        " && window.kept.chart === document.querySelector('#inspection svg.rank-chart')"
    )
    expect(page.locator("#files-filter")).to_have_value("traces")
    expect(page.locator("table.files tbody tr")).to_have_count(1)
    # Promotion's own request, and no other: nothing was read again.
    asked = [r.url for r in tab.requests[before:] if "/api/" in r.url]
    assert len(asked) == 1 and asked[0].endswith("/promote"), asked
