"""The list searched and sorted by performance on the page: the figure filters, the
stragglers choice and the sort, each kept in the URL and paged under its order."""

from __future__ import annotations

import gzip
import secrets
import statistics
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from playwright.sync_api import expect

from tests.analysis.run_writer import Run, rank_trace
from tests.flows import inspected, upload
from tests.server import ServerProcess
from tests.web.browser import Tab

#: One more than a page of the list (20): a sorted list needs its Next page. Three ranks
#: each, every fifth with a rank three times slower (a straggler); seeds and kernel counts
#: vary the GPU idle %.
RUNS = tuple(
    Run(
        tp=1,
        dp=3,
        steps=3,
        seed=40 + n,
        kernels_per_step=4 + 2 * (n % 7),
        slow={1: 3.0} if n % 5 == 2 else {},
    )
    for n in range(21)
)


@dataclass(frozen=True)
class Shown:
    """A listed run: its name and the figures the page's filters and sorts read."""

    name: str
    gpu_idle_pct: float
    has_stragglers: bool


def _shown(name: str, traceset: dict[str, Any]) -> Shown:
    """The median over ranks of the GPU idle % the inspection shows, and its stragglers."""
    ranks = traceset["inspection"]["perRank"]
    return Shown(
        name,
        statistics.median(r["gpu"]["idlePct"] for r in ranks),
        any(r["straggler"] for r in ranks),
    )


@pytest.fixture(scope="module")
def workspace_token(server: ServerProcess) -> str:
    """One workspace for the module: its runs are inspected once, not once a test."""
    return server.new_token("ws-" + secrets.token_hex(6))


@pytest.fixture(scope="module")
def runs(server: ServerProcess, workspace_token: str) -> Iterator[list[Shown]]:
    """The runs' tracesets, inspected, oldest first."""
    with httpx.Client(
        base_url=server.url, headers={"Authorization": f"Bearer {workspace_token}"}, timeout=60
    ) as api:
        ids = []
        for n, run in enumerate(RUNS):
            files = {
                f"rank-{r}.json.gz": gzip.compress(rank_trace(run, r), mtime=0)
                for r in range(run.world)
            }
            ids.append(upload(api, files, {"shape": {"rankCount": run.world}}, name=f"run {n:02d}"))
        shown = [_shown(t["name"], inspected(api, t["id"])) for t in ids]
    idle = [s.gpu_idle_pct for s in shown]
    assert len(set(idle)) == len(idle)  # distinct: the sorted order is no tie-break
    assert 0 < sum(s.has_stragglers for s in shown) < len(shown)
    yield shown


def _names(runs: list[Shown]) -> list[str]:
    return [r.name for r in runs]


def test_the_figure_filters_take_decimals_and_keep_them_in_the_url(
    tab: Tab, runs: list[Shown]
) -> None:
    page = tab.page
    bound = sorted(r.gpu_idle_pct for r in runs)[4]
    tab.sign_in()
    field = page.get_by_label("GPU idle % at most", exact=True)
    expect(field).to_have_attribute("type", "number")
    expect(field).to_have_attribute("step", "any")
    field.fill(repr(bound))
    page.get_by_role("button", name="Apply filters").click()
    rows = page.locator("table.tracesets tbody tr .cell-name")
    expect(rows).to_have_text(_names([r for r in runs[::-1] if r.gpu_idle_pct <= bound]))
    assert f"gpu_idle_pct_max={bound!r}" in page.url
    tab.shoot("list-figure-filter")

    page.reload()
    expect(rows).to_have_count(5)
    expect(page.get_by_label("GPU idle % at most", exact=True)).to_have_value(repr(bound))


def test_stragglers_yes_lists_the_runs_with_one(tab: Tab, runs: list[Shown]) -> None:
    tab.sign_in()
    tab.page.get_by_label("Has stragglers", exact=True).select_option(label="Yes")
    tab.page.get_by_role("button", name="Apply filters").click()
    rows = tab.page.locator("table.tracesets tbody tr .cell-name")
    expect(rows).to_have_text(_names([r for r in runs[::-1] if r.has_stragglers]))
    assert "has_stragglers=true" in tab.page.url


def test_a_sort_reorders_the_list_and_its_pages_follow_it(tab: Tab, runs: list[Shown]) -> None:
    page = tab.page
    ordered = _names(sorted(runs, key=lambda r: r.gpu_idle_pct, reverse=True))
    tab.sign_in()
    sort = page.get_by_label("Sort by", exact=True)
    expect(sort.locator("option")).to_have_count(7)
    sort.select_option(label="GPU idle %, high first")
    rows = page.locator("table.tracesets tbody tr .cell-name")
    expect(rows).to_have_text(ordered[:20])
    assert "sort=-gpu_idle_pct" in page.url
    tab.shoot("list-sorted")

    page.get_by_role("button", name="Next →").click()
    expect(rows).to_have_text(ordered[20:])
    listed = [r.url for r in tab.requests if "/api/v1/tracesets?" in r.url]
    assert "sort=-gpu_idle_pct" in listed[-1] and "cursor=" in listed[-1]
    page.get_by_role("button", name="← Previous").click()
    expect(rows).to_have_text(ordered[:20])

    page.reload()
    expect(rows).to_have_text(ordered[:20])
    expect(page.get_by_label("Sort by", exact=True)).to_have_value("-gpu_idle_pct")


def test_a_sort_keeps_the_filters(tab: Tab, runs: list[Shown]) -> None:
    page = tab.page
    tab.sign_in()
    page.get_by_label("Has stragglers", exact=True).select_option(label="No")
    page.get_by_label("Sort by", exact=True).select_option(label="GPU idle %, low first")
    rows = page.locator("table.tracesets tbody tr .cell-name")
    calm = sorted((r for r in runs if not r.has_stragglers), key=lambda r: r.gpu_idle_pct)
    expect(rows).to_have_text(_names(calm))
    assert "has_stragglers=false" in page.url and "sort=gpu_idle_pct" in page.url


def test_a_decimal_the_service_refuses_shows_its_message_by_the_field(
    tab: Tab, api: httpx.Client, runs: list[Shown]
) -> None:
    expected = api.get("/api/v1/tracesets", params={"gpu_idle_pct_max": "nan"}).json()
    tab.sign_in()
    tab.open("#/?gpu_idle_pct_max=nan")
    expect(tab.page.locator("#filter-gpu_idle_pct_max-error")).to_have_text(
        expected["errors"][0]["message"]
    )
    expect(tab.page.get_by_label("GPU idle % at most", exact=True)).to_have_attribute(
        "aria-invalid", "true"
    )


def test_text_that_is_no_number_is_named_and_not_dropped(tab: Tab, runs: list[Shown]) -> None:
    tab.sign_in()
    field = tab.page.get_by_label("Step ms at most", exact=True)
    field.focus()
    tab.page.keyboard.type("1e")
    tab.page.get_by_role("button", name="Apply filters").click()
    expect(tab.page.locator("#filter-step_ms_max-error")).to_have_text(
        "Enter a number, such as 12.5."
    )
    assert tab.focused() == "#filter-step_ms_max"
    assert "step_ms_max" not in tab.page.url
