"""The top kernels over ranks and each rank's idle time by cause, at 8 and at 8,192 ranks."""

from __future__ import annotations

import gzip
import itertools
import json
import re
from typing import Any

import httpx
from playwright.sync_api import Locator, expect

from tests.analysis.run_writer import ALL_REDUCE, COMPUTE_KERNELS, Run, rank_trace
from tests.flows import inspected
from tests.web.browser import NARROW, WIDE, Tab
from tests.web.seed import upload_text
from tests.web.test_chart_labels import OUTSIDE
from tests.web.test_many_files import tar_of

GEMM = COMPUTE_KERNELS[0]
SLOW_RANK = 6_001
WORLD = 8_192


def spread(figures: list[dict[str, Any]]) -> list[tuple[str, float, int, int]]:
    """Each kernel's total over ranks, with the ranks of its least and most time, largest first."""
    sums: dict[str, list[tuple[float, int]]] = {}
    for one in figures:
        for kernel in one["topKernels"]:
            if kernel["type"] != "OTHER":
                sums.setdefault(kernel["name"], []).append((kernel["sumUs"], one["rank"]))
    rows = [(name, sum(us for us, _ in v), min(v)[1], max(v)[1]) for name, v in sums.items()]
    return sorted(rows, key=lambda r: -r[1])


def idle_bars_cover(chart: Locator, world: int) -> None:
    """The idle bars, folded or not, run from rank 0 to the last without a hole."""
    spans: list[list[int]] = chart.evaluate(
        """(svg) => [...svg.querySelectorAll('g.idle-bar')].map((g) =>
            [+g.getAttribute('data-rank'), +g.getAttribute('data-last-rank')])"""
    )
    assert spans[0][0] == 0 and spans[-1][1] == world - 1
    assert all(b[0] == a[1] + 1 for a, b in itertools.pairwise(spans))


def labels_inside(tab: Tab, chart: Locator) -> None:
    for size in (WIDE, NARROW):
        tab.page.set_viewport_size(size)
        tab.settle()
        assert chart.evaluate_all(OUTSIDE) == [], size
        width = tab.page.evaluate("() => document.documentElement.scrollWidth")
        assert width <= size["width"], size
    tab.page.set_viewport_size(WIDE)
    tab.settle()


def test_eight_ranks_name_the_rank_where_the_top_kernel_is_slowest(
    tab: Tab, api: httpx.Client
) -> None:
    run = Run(tp=2, dp=4, steps=4, slow={5: 6.0})
    files = {f"rank-{r}.json.gz": gzip.compress(rank_trace(run, r)) for r in range(run.world)}
    created = upload_text(api, '{"shape": {"rankCount": 8}}', name="eight ranks", files=files)
    inspection = inspected(api, created["tracesetId"])["inspection"]
    expected = spread(inspection["perRank"])
    top, _, _, slowest = expected[0]
    assert slowest == 5  # the run's slow rank is where its top kernel takes longest
    tab.sign_in()
    tab.open_traceset("eight ranks")

    rows = tab.page.locator("table.kernel-table tbody tr")
    expect(rows.first).to_have_attribute("data-kernel", top)
    expect(rows).to_have_count(len(expected))
    assert rows.evaluate_all("(rows) => rows.map((r) => r.dataset.kernel)") == [
        name for name, *_ in expected
    ]
    expect(rows.first.locator("td.kernel-max")).to_contain_text("rank 5")
    expect(rows.first.locator("svg.spread")).to_be_visible()

    chart = tab.page.locator("#inspection svg.idle-chart")
    bars = chart.locator("g.idle-bar")
    expect(bars).to_have_count(8)
    idle_bars_cover(chart, 8)
    for one in inspection["perRank"]:
        # A negative kernel wait (kernels overlapping on a stream, as HTA counts it) draws as none.
        parts = ("hostWaitUs", "kernelWaitUs", "otherUs")
        total = sum(max(0.0, s[part]) for s in one["idleBreakdown"] for part in parts)
        rank = one["rank"]
        bar = chart.locator(f'g.idle-bar[data-rank="{rank}"]')
        assert abs(float(bar.get_attribute("data-us") or 0) - total) < 1e-6
        host = sum(max(0.0, s["hostWaitUs"]) for s in one["idleBreakdown"])
        share = re.escape(f"({100 * host / total:.1f} %)")
        expect(bar.locator("title")).to_contain_text(re.compile(rf"host wait [^,(]+ {share},"))
    legend = tab.page.locator("ul.idle-legend li")
    expect(legend).to_have_text(["host wait", "kernel wait", "other idle"])
    labels_inside(tab, chart)
    tab.shoot("kernels-idle-8")


def small_trace(rank: int) -> bytes:
    """Four kernels on one stream, each launched by a cudaLaunchKernel: one after a short
    gap it was queued for (kernel wait), one launched after the previous ended (host wait),
    one queued behind a long gap (other). Rank SLOW_RANK's matmul is ten times slower and
    its host wait longer."""
    slow = rank == SLOW_RANK
    pid = 4000 + rank
    plan = [  # kernel, launch relative to the previous kernel's end, gap before it, duration
        (GEMM, -10, 10, 1000 if slow else 100),
        (ALL_REDUCE, -20, 10, 50),
        (GEMM, 5, 400 if slow else 60, 80),
        (ALL_REDUCE, -30, 100, 40),
    ]
    events: list[dict[str, Any]] = []
    end = 0
    for correlation, (name, launch, gap, dur) in enumerate(plan, start=100):
        events += [
            {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": pid, "tid": pid,
             "ts": 1000 + end + launch, "dur": 4, "args": {"correlation": correlation}},
            {"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": 1000 + end + gap,
             "dur": dur, "args": {"stream": 7, "correlation": correlation}},
        ]  # fmt: skip
        end += gap + dur
    info = {"backend": "nccl", "rank": rank, "world_size": WORLD}
    return json.dumps({"distributedInfo": info, "traceEvents": events}).encode()


def test_eight_thousand_ranks_fold_into_bars_and_name_the_slow_rank(
    tab: Tab, api: httpx.Client
) -> None:
    traces = {f"rank-{r:04d}.json": small_trace(r) for r in range(WORLD)}
    metadata = '{"shape": {"rankCount": 8192}}'
    files = {"traces.tar": tar_of(traces)}
    created = upload_text(api, metadata, name="8192 ranks", files=files)
    inspection = inspected(api, created["tracesetId"])["inspection"]
    assert inspection["perRankCount"] == WORLD
    tab.sign_in()
    tab.open_traceset("8192 ranks")
    expect(tab.page.locator("#figures-caption")).to_contain_text("All 8,192 ranks are shown.")

    rows = tab.page.locator("table.kernel-table tbody tr")
    expect(rows.first).to_have_attribute("data-kernel", GEMM)
    expect(rows.first.locator("td.kernel-max")).to_contain_text("rank 6,001")
    expect(rows.first).to_contain_text("8,192")  # every rank ran it

    chart = tab.page.locator("#inspection svg.idle-chart")
    per = 32  # 8,192 ranks in at most 256 bars
    expect(chart).to_have_attribute("data-ranks-per-bar", str(per))
    expect(chart.locator("g.idle-bar")).to_have_count(WORLD // per)
    idle_bars_cover(chart, WORLD)
    slow = chart.locator(f'g.idle-bar[data-idlest-rank="{SLOW_RANK}"]')
    expect(slow).to_have_count(1)
    expect(slow.locator("title")).to_contain_text("its idlest, rank 6,001")
    expect(tab.page.locator("ul.idle-legend li")).to_have_count(3)
    assert tab.page.evaluate("() => document.querySelectorAll('#inspection *').length") < 10_000
    labels_inside(tab, chart)
    tab.shoot("kernels-idle-8192")
