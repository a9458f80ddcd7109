"""The per-rank figures on the page, from a real run inspected by the service."""

from __future__ import annotations

import gzip

import httpx
from playwright.sync_api import expect

from tests.analysis.run_writer import Run, rank_trace
from tests.flows import inspected
from tests.web.browser import NARROW, Tab
from tests.web.seed import upload_text

#: The GPU chart's plot: 220 px less its top and bottom margins (14 + 40).
PLOT_HEIGHT = 220 - 14 - 40


def test_stacked_gpu_time_and_step_time_with_the_straggler_and_the_desync(
    tab: Tab, api: httpx.Client
) -> None:
    run = Run(tp=2, dp=2, steps=4, slow={2: 2.0}, skip={1: 2})
    files = {f"rank-{r}.json.gz": gzip.compress(rank_trace(run, r)) for r in range(4)}
    created = upload_text(api, '{"shape": {"rankCount": 4}}', name="run with figures", files=files)
    inspection = inspected(api, created["tracesetId"])["inspection"]
    assert inspection["stragglers"] == [2] and inspection["desyncedGroups"]
    tab.sign_in()
    tab.open_traceset("run with figures")

    gpu = tab.page.locator("#inspection svg.figures-chart").first
    expect(gpu).to_be_visible()
    bars = gpu.locator("g.gpu-bar")
    expect(bars).to_have_count(4)
    for i in range(4):
        parts = bars.nth(i).locator("rect.part")
        heights = [float(parts.nth(j).get_attribute("height") or 0) for j in range(parts.count())]
        labels = [parts.nth(j).get_attribute("data-part") for j in range(parts.count())]
        assert labels[0] == "compute" and "idle" in labels
        assert abs(sum(heights) - PLOT_HEIGHT) < 0.5  # each bar is its whole span
    figures = inspection["perRank"][0]["gpu"]
    compute = bars.nth(0).locator('rect[data-part="compute"]')
    expect(compute.locator("title")).to_have_text(
        f"rank 0: compute {100 * figures['computeUs'] / figures['kernelUs']:.2f} %"
    )
    desynced = {m.get_attribute("data-rank") for m in gpu.locator("path.desync-marker").all()}
    _, members = run.dp_group(1)
    assert desynced == {str(r) for r in members}

    steps = tab.page.locator("#inspection svg.figures-chart").nth(1)
    expect(steps.locator("rect.step-bar")).to_have_count(4)
    expect(steps.locator("rect.step-bar.straggler")).to_have_count(1)
    assert steps.locator("rect.straggler").get_attribute("data-rank") == "2"
    expect(tab.page.locator("#inspection")).to_contain_text("Rank 2 straggles")
    assert tab.page.locator("style, [style]").count() == 0
    tab.shoot("rank-figures")

    tab.page.set_viewport_size(NARROW)
    tab.settle()
    assert tab.page.evaluate("() => document.documentElement.scrollWidth") <= NARROW["width"]
