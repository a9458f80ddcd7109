"""The per-rank figures on the page, from a real run inspected by the service."""

from __future__ import annotations

import gzip
import io
import tarfile

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


def test_past_the_inspections_first_256_ranks_the_page_reads_the_rest_and_bins_them(
    tab: Tab, api: httpx.Client
) -> None:
    run = Run(tp=4, dp=150, steps=2, kernels_per_step=2, slow={301: 2.0}, skip={5: 1})
    traces = {f"rank-{r:03d}.json": rank_trace(run, r) for r in range(run.world)}
    archive = io.BytesIO()
    with tarfile.open(fileobj=archive, mode="w") as tar:
        for name, data in traces.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    created = upload_text(
        api,
        '{"shape": {"rankCount": 600}}',
        name="600 ranks",
        files={"traces.tar": archive.getvalue()},
    )
    inspection = inspected(api, created["tracesetId"])["inspection"]
    assert len(inspection["perRank"]) == 256 and inspection["perRankCount"] == 600
    assert inspection["stragglers"] == [301] and inspection["desyncedGroups"]
    tab.sign_in()
    tab.open_traceset("600 ranks")

    caption = tab.page.locator("#figures-caption")
    expect(caption).to_contain_text("All 600 ranks are shown.")
    gpu = tab.page.locator("#inspection svg.figures-chart").first
    per = 3  # 600 ranks in at most 256 bars
    expect(gpu).to_have_attribute("data-ranks-per-bar", str(per))
    bars = gpu.locator("g.gpu-bar")
    expect(bars).to_have_count(200)
    assert bars.last.get_attribute("data-last-rank") == "599"
    heights: list[float] = gpu.evaluate(
        """(svg) => [...svg.querySelectorAll('g.gpu-bar')].map((g) =>
            [...g.querySelectorAll('rect')].reduce((sum, r) => sum + +r.getAttribute('height'), 0))"""
    )
    assert all(abs(h - PLOT_HEIGHT) < 0.5 for h in heights)

    _, members = run.dp_group(5)
    expected = {
        str(first) for first in range(0, 600, per) if set(range(first, first + per)) & set(members)
    }
    marked = {m.get_attribute("data-rank") for m in gpu.locator("path.desync-marker").all()}
    assert marked == expected and len(marked) < 200

    steps = tab.page.locator("#inspection svg.figures-chart").nth(1)
    expect(steps.locator("rect.step-bar")).to_have_count(200)
    straggler = steps.locator("rect.step-bar.straggler")
    expect(straggler).to_have_count(1)
    assert straggler.get_attribute("data-rank") == "300"
    expect(straggler.locator("title")).to_contain_text("ranks 300–302")
    expect(straggler.locator("title")).to_contain_text("a straggler among them")
    tab.shoot("rank-figures-600")


def test_a_duplicated_ranks_bars_name_their_files(tab: Tab, api: httpx.Client) -> None:
    run = Run(tp=2, dp=1, steps=2, kernels_per_step=4)
    files = {
        "first/rank-0.json": rank_trace(run, 0),
        "again/rank-0.json": rank_trace(run, 0),
        "rank-1.json": rank_trace(run, 1),
    }
    created = upload_text(api, '{"shape": {"rankCount": 2}}', name="rank 0 twice", files=files)
    inspection = inspected(api, created["tracesetId"])["inspection"]
    assert sorted(r["rank"] for r in inspection["perRank"]) == [0, 0, 1]
    tab.sign_in()
    tab.open_traceset("rank 0 twice")
    expect(tab.page.locator("#figures-caption")).to_contain_text("numbered (0 #1, 0 #2)")

    for chart in tab.page.locator("#inspection svg.figures-chart").all():
        labels = chart.locator("text.axis-label")
        expect(labels.filter(has_text="#")).to_have_count(2)
        assert {"0 #1", "0 #2", "1"} <= set(labels.all_text_contents())
        bars = chart.locator('[data-rank="0"]')
        expect(bars).to_have_count(2)
        named = {bars.nth(i).get_attribute("data-file") for i in range(2)}
        assert named == {"first/rank-0.json", "again/rank-0.json"}
        titles = " ".join(chart.locator('[data-rank="0"] title').all_text_contents())
        assert "rank 0 #1 of 2 (" in titles and "rank 0 #2 of 2 (" in titles
        assert "(first/rank-0.json)" in titles and "(again/rank-0.json)" in titles
    tab.shoot("rank-figures-duplicated")
