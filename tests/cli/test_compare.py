"""``tracesets compare`` against the real service: the headline, the rank and kernel
tables (past a screenful of ranks, those that changed most), ``--json``, ``--operators``."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import httpx

from tests.analysis.run_writer import Run
from tests.api.test_compare import inspected_run
from tests.api.test_rank_figures import run_files
from tests.cli.test_cli import Run as Tracesets
from tests.cli.test_cli import as_json, ok
from tests.flows import upload
from tracesets.cli.compare import SHOWN_RANKS


def compared_json(api: httpx.Client, traceset: str, baseline: str) -> dict[str, Any]:
    """The comparison as the service answers it, with every rank and kernel."""
    base = f"/api/v1/tracesets/{traceset}/compare/{baseline}"
    answer: dict[str, Any] = api.get(base).json()
    for part in ("ranks", "kernels"):
        page = api.get(f"{base}/{part}", params={"limit": 1000}).json()
        assert page["nextCursor"] is None
        answer |= {part: page["items"], f"{part}NextCursor": None}
    return answer


def test_headline_then_ranks_then_kernels(tracesets: Tracesets, api: httpx.Client) -> None:
    baseline = inspected_run(api, Run(tp=2, dp=2, steps=3, seed=1))["id"]
    slower = Run(tp=2, dp=2, steps=3, seed=2, slow={r: 1.5 for r in range(4)})
    traceset = inspected_run(api, slower)["id"]
    answer = compared_json(api, traceset, baseline)
    out = ok(tracesets("compare", traceset, baseline)).stdout
    head = answer["headline"]
    lines = out.splitlines()
    assert lines[0] == f"{traceset} against baseline {baseline} (4 ranks against 4)"
    assert re.search(
        rf"median step +{head['stepMs']:,.2f} ms +baseline +{head['baselineStepMs']:,.2f} ms +×{head['stepRatio']:.3f}",
        lines[1],
    )
    assert f"{head['gpuIdleDiffPct']:+,.2f} points" in lines[2]
    assert lines[4] == "  most of the change:"
    first = head["contributors"][0]
    assert lines[5].split()[:2] == [first["kind"], f"{first['diffUs']:+,.1f}"]
    ranks = out.index("per rank (this traceset / baseline")
    kernels = out.index("kernels, by absolute difference in time")
    assert ranks < kernels
    rows = [line.split() for line in out[ranks:kernels].splitlines()[2:] if line.strip()]
    assert [row[0] for row in rows] == ["0", "1", "2", "3"]
    for row, rank in zip(rows, answer["ranks"], strict=True):
        assert row[3] == f"×{rank['stepRatio']:.3f}"
        assert row[6] == f"{rank['diff']['idlePct']:+,.2f}"
    top = answer["kernels"][0]
    assert f"{top['diffUs']:+,.1f}" in out[kernels:].splitlines()[2]

    printed = as_json(tracesets("compare", traceset, baseline, "--json"))
    assert printed == answer

    operators = as_json(tracesets("compare", traceset, baseline, "--operators", "first", "--json"))
    raw = api.get(
        f"/api/v1/tracesets/{traceset}/compare/{baseline}/operators",
        params={"step": "first", "limit": 1000},
    ).json()
    assert operators == raw["items"]
    table = ok(tracesets("compare", traceset, baseline, "--operators", "all")).stdout
    assert "every profiled step of every rank" in table or table.startswith("operators: none")

    shown = ok(tracesets("show", traceset)).stdout
    assert "baseline:" not in shown  # none named, none promoted
    named = upload(api, run_files(slower), {"shape": {"rankCount": 4}}, baseline=baseline)
    said = f"baseline: {baseline} (tracesets compare {named['id']} {baseline})"
    assert said in ok(tracesets("show", named["id"])).stdout.splitlines()

    wider = inspected_run(api, Run(tp=2, dp=3, steps=3, seed=3))["id"]
    note = compared_json(api, wider, baseline)["perRankNote"]
    aggregates = ok(tracesets("compare", wider, baseline)).stdout
    assert note in aggregates.splitlines() and "per rank" not in aggregates
    assert "kernels, by absolute difference in time" in aggregates

    refused = tracesets("compare", traceset, traceset)
    assert refused.returncode == 1 and "baselineId" in refused.stderr


def test_upload_names_its_baseline(tracesets: Tracesets, api: httpx.Client, tmp_path: Path) -> None:
    baseline = inspected_run(api, Run(tp=2, dp=2, steps=3, seed=1))["id"]
    for name, data in run_files(Run(tp=2, dp=2, steps=3, seed=2)).items():
        (tmp_path / name).write_bytes(data)
    args = ("upload", tmp_path, "--rank-count", "4", "--json", "--baseline")
    assert as_json(tracesets(*args, baseline))["baselineId"] == baseline
    refused = tracesets(*args, "last")
    assert refused.returncode == 1 and "baselineId" in refused.stderr
    one_rank = tracesets(*args, baseline, "--rank", "0", "--world-size", "4")
    assert one_rank.returncode == 2 and "--baseline" in one_rank.stderr


def test_past_a_screenful_of_ranks_those_that_changed_most(
    tracesets: Tracesets, api: httpx.Client
) -> None:
    shape = {"tp": 2, "dp": 12, "steps": 2, "kernels_per_step": 2}
    baseline = inspected_run(api, Run(**shape, seed=1))["id"]  # type: ignore[arg-type]
    traceset = inspected_run(api, Run(**shape, seed=1, slow={7: 3.0, 18: 2.0}))["id"]  # type: ignore[arg-type]
    out = ok(tracesets("compare", traceset, baseline)).stdout
    title = f"the {SHOWN_RANKS} ranks that changed most of 24"
    assert title in out
    table = out[out.index(title) : out.index("kernels, by absolute")].splitlines()[2:]
    rows = [line.split()[0] for line in table if line.strip()]
    assert len(rows) == SHOWN_RANKS and rows[:2] == ["7", "18"]
    every = ok(tracesets("compare", traceset, baseline, "--all-ranks")).stdout
    listed = every[every.index("per rank") : every.index("kernels, by absolute")].splitlines()[2:]
    assert [line.split()[0] for line in listed if line.strip()] == [str(r) for r in range(24)]
