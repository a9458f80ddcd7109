"""The per-rank charts keep every label inside their drawing: a step time of seconds on
the y axis, the last rank's number under the right edge, on a wide and a narrow page."""

from __future__ import annotations

import gzip

import httpx
from playwright.sync_api import expect

from tests.analysis.run_writer import Run, rank_trace
from tests.flows import inspected
from tests.web.browser import NARROW, WIDE, Tab
from tests.web.seed import upload_text

#: Each text of each per-rank chart, with its box and the chart's, in page pixels.
OUTSIDE = """(svgs) => svgs.flatMap((svg) => {
    const chart = svg.getBoundingClientRect();
    return [...svg.querySelectorAll('text')].map((text) => {
        const box = text.getBoundingClientRect();
        const inside = box.left >= chart.left - 0.5 && box.right <= chart.right + 0.5
            && box.top >= chart.top - 0.5 && box.bottom <= chart.bottom + 0.5;
        return inside ? null : `${text.textContent}: ${box.left}-${box.right} x ${box.top}-${box.bottom}`
            + ` outside ${chart.left}-${chart.right} x ${chart.top}-${chart.bottom}`;
    }).filter(Boolean);
})"""


def test_axis_labels_lie_inside_the_charts(tab: Tab, api: httpx.Client) -> None:
    run = Run(tp=2, dp=6, steps=2, kernels_per_step=4, slow={3: 3000.0})
    files = {f"rank-{r}.json.gz": gzip.compress(rank_trace(run, r)) for r in range(run.world)}
    created = upload_text(api, '{"shape": {"rankCount": 12}}', name="seconds a step", files=files)
    inspection = inspected(api, created["tracesetId"])["inspection"]
    assert max(r["steps"]["maxUs"] for r in inspection["perRank"]) > 1_000_000  # seconds
    tab.sign_in()
    tab.open_traceset("seconds a step")
    charts = tab.page.locator("#inspection svg.figures-chart")
    expect(charts).to_have_count(2)
    for size in (WIDE, NARROW):
        tab.page.set_viewport_size(size)
        tab.settle()
        assert charts.evaluate_all(OUTSIDE) == [], size
    tab.shoot("chart-labels")
