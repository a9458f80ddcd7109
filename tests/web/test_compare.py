"""Compare with… on the page: from a traceset to its comparison with a baseline, the
headline, the side-by-side rank bars (in runs past 128 ranks) and the kernel differences."""

from __future__ import annotations

import io
import tarfile
from typing import Any

import httpx
from playwright.sync_api import expect

from tests.analysis.run_writer import Run, rank_trace
from tests.api.test_rank_figures import run_files
from tests.flows import inspected, upload
from tests.web.browser import NARROW, Tab
from tests.web.seed import upload_text

#: The chart's plot: 240 px less its top and bottom margins (14 + 40).
PLOT_HEIGHT = 240 - 14 - 40


def uploaded(api: httpx.Client, name: str, run: Run, baseline: str | None = None) -> dict[str, Any]:
    """A run's traces as a traceset named ``name`` (its baseline named), once inspected."""
    metadata = {"shape": {"rankCount": run.world}}
    created = upload(api, run_files(run), metadata, name=name, baseline=baseline)
    return inspected(api, created["id"])


def bar_heights(tab: Tab) -> list[list[float]]:
    """Each bar's parts' heights added up, pair by pair."""
    heights: list[list[float]] = tab.page.locator("svg.compare-chart").evaluate(
        """(svg) => [...svg.querySelectorAll('g.compare-pair')].map((pair) =>
            [...pair.querySelectorAll('g.compare-bar')].map((bar) =>
                [...bar.querySelectorAll('rect')].reduce((s, r) => s + +r.getAttribute('height'), 0)))"""
    )
    return heights


def test_compare_with_a_baseline_from_the_tracesets_view(tab: Tab, api: httpx.Client) -> None:
    baseline = uploaded(api, "last week", Run(tp=2, dp=2, steps=3, seed=1))
    slower = Run(tp=2, dp=2, steps=3, seed=2, slow={r: 1.5 for r in range(4)})
    traceset = uploaded(api, "this week", slower)
    other_size = uploaded(api, "six ranks", Run(tp=2, dp=3, steps=3, seed=3))
    answer: dict[str, Any] = api.get(
        f"/api/v1/tracesets/{traceset['id']}/compare/{baseline['id']}"
    ).json()
    tab.sign_in()
    tab.open_traceset(traceset["name"])

    tab.page.get_by_role("button", name="Compare with…").click()
    picker = tab.page.get_by_label("Baseline")
    expect(picker).to_be_focused()
    expect(picker.locator("option")).to_have_count(1)  # the same rank count only
    expect(picker.locator("option")).to_have_attribute("value", baseline["id"])
    assert other_size["id"] not in tab.page.locator("#compare").inner_html()
    tab.shoot("compare-with")
    tab.page.get_by_role("button", name="Compare", exact=True).click()
    expect(tab.page.get_by_role("heading", level=1)).to_contain_text("Compare")
    assert tab.page.url.endswith(f"#/tracesets/{traceset['id']}/compare/{baseline['id']}")

    head = answer["headline"]
    step = tab.page.locator('tr[data-figure="step"]')
    expect(step).to_contain_text(f"{head['stepMs']:.2f} ms")
    expect(step).to_contain_text(f"×{head['stepRatio']:.3f}")
    idle = tab.page.locator('tr[data-figure="idle"]')
    expect(idle).to_contain_text(f"{abs(head['gpuIdleDiffPct']):.2f} points")
    contributors = tab.page.locator("ol.contributors li")
    expect(contributors).to_have_count(len(head["contributors"]))
    expect(contributors.first).to_contain_text(head["contributors"][0]["name"])

    pairs = tab.page.locator("svg.compare-chart g.compare-pair")
    expect(pairs).to_have_count(4)
    assert all(
        len(pair) == 2 and all(abs(h - PLOT_HEIGHT) < 0.5 for h in pair)
        for pair in bar_heights(tab)
    )
    rank0 = answer["ranks"][0]
    idle_part = pairs.first.locator('g.side-traceset rect[data-part="idle"] title')
    expect(idle_part).to_have_text(
        f"rank 0, {traceset['name']}: idle {rank0['traceset']['idlePct']:.2f} %"
    )
    kernels = tab.page.locator("table.compare-kernels tbody tr")
    expect(kernels).to_have_count(len(answer["kernels"]))
    assert kernels.first.get_attribute("data-kernel") == answer["kernels"][0]["name"]
    assert tab.page.locator("style, [style]").count() == 0
    tab.shoot("compare")

    tab.page.set_viewport_size(NARROW)
    tab.settle()
    assert tab.page.evaluate("() => document.documentElement.scrollWidth") <= NARROW["width"]


def test_the_baseline_the_upload_named_is_preselected(tab: Tab, api: httpx.Client) -> None:
    named = uploaded(api, "two weeks ago", Run(tp=2, dp=2, steps=3, seed=1))
    uploaded(api, "last week", Run(tp=2, dp=2, steps=3, seed=2))
    traceset = uploaded(api, "this week", Run(tp=2, dp=2, steps=3, seed=3), named["id"])
    assert traceset["baselineId"] == named["id"]
    tab.sign_in()
    tab.open_traceset("this week")
    picker = tab.page.get_by_label("Baseline")
    expect(picker.locator("option")).to_have_count(2)
    expect(picker).to_have_value(named["id"])
    expect(picker.locator("option:checked")).to_contain_text("two weeks ago")
    expect(picker.locator("option:checked")).to_contain_text("its baseline")
    expect(tab.page.locator("#baseline-help")).to_contain_text("Its baseline is chosen")
    tab.page.get_by_role("button", name="Compare", exact=True).click()
    expect(tab.page.get_by_role("heading", level=1)).to_have_text(
        "Compare this week with two weeks ago"
    )


def _tar(run: Run) -> bytes:
    archive = io.BytesIO()
    with tarfile.open(fileobj=archive, mode="w") as tar:
        for rank in range(run.world):
            data = rank_trace(run, rank)
            info = tarfile.TarInfo(f"rank-{rank:04d}.json")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return archive.getvalue()


def test_past_128_ranks_each_pair_is_a_run_of_ranks(tab: Tab, api: httpx.Client) -> None:
    ids = []
    shape: dict[str, Any] = {"tp": 4, "dp": 75, "steps": 2, "kernels_per_step": 2}
    for name, run in (
        ("300 ranks before", Run(**shape, seed=1)),
        ("300 ranks after", Run(**shape, seed=2, slow={290: 3.0})),
    ):
        metadata = '{"shape": {"rankCount": 300}}'
        created = upload_text(api, metadata, name=name, files={"traces.tar": _tar(run)})
        assert inspected(api, created["tracesetId"])["inspection"]["perRankCount"] == 300
        ids.append(created["tracesetId"])
    tab.sign_in()
    tab.open(f"#/tracesets/{ids[1]}/compare/{ids[0]}")
    caption = tab.page.locator("#compare-caption")
    expect(caption).to_contain_text("300 ranks, each pair of bars 3 ranks")  # read past 256
    chart = tab.page.locator("svg.compare-chart")
    expect(chart).to_have_attribute("data-ranks-per-bar", "3")
    pairs = chart.locator("g.compare-pair")
    expect(pairs).to_have_count(100)
    assert pairs.last.get_attribute("data-last-rank") == "299"
    assert all(len(pair) == 2 for pair in bar_heights(tab))
    expect(tab.page.locator("#compare-moved")).to_contain_text("rank")
    tab.shoot("compare-300")


def test_8192_ranks_draw_as_128_pairs_of_64(tab: Tab) -> None:
    """The chart from 8,192 compared ranks (too many to upload twice here): the last rank
    only the baseline has, and one run whose idle grew, as the ranks route answers them."""
    tab.open()
    drawn: dict[str, Any] = tab.page.evaluate(
        """async () => {
            const { compareChart } = await import('/static/comparechart.js');
            const side = (idle) => ({ idleUs: idle, computeUs: 600, nonComputeUs: 400 - idle,
                idlePct: idle / 10, computePct: 60, nonComputePct: 40 - idle / 10, stepMs: 1 });
            const ranks = Array.from({ length: 8192 }, (_, rank) => {
                const idle = rank >= 640 && rank < 704 ? 300 : 100;
                const last = rank === 8191;
                return { rank, present: last ? 'baseline' : 'both', traceset: last ? null : side(idle),
                    baseline: side(100), diff: null, stepRatio: null };
            });
            const chart = compareChart(ranks, 1200, { traceset: 'after', baseline: 'before' });
            const pairs = [...chart.querySelectorAll('g.compare-pair')];
            const idle = (pair, which) => +pair.querySelector(
                `g.side-${which} rect[data-part="idle"]`).getAttribute('height');
            return {
                per: chart.getAttribute('data-ranks-per-bar'), pairs: pairs.length,
                last: pairs[127].getAttribute('data-last-rank'),
                grew: pairs.filter((p) => idle(p, 'traceset') > idle(p, 'baseline') + 1)
                    .map((p) => p.getAttribute('data-rank')),
                marked: [...chart.querySelectorAll('.one-sided-marker')].length,
            };
        }"""
    )
    assert drawn == {"per": "64", "pairs": 128, "last": "8191", "grew": ["640"], "marked": 1}
