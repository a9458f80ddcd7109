"""The kernels' figures as served: per rank in the inspection, in the per-rank pages and in
``tracesets inspect --json``, as the analysis gives them in process; and each top
kernel's spread over ranks, naming the rank where it is slowest."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from tests.analysis.run_writer import Run
from tests.api.test_rank_figures import run_files
from tests.cli.test_cli import as_json, run_tracesets
from tests.flows import inspected, upload
from tracesets.analysis import analyze_file
from tracesets.analysis.report import kernels_json
from tracesets.inspection import BytesSource

MEMBERS = ("kernelTypes", "topKernels", "idleBreakdown", "launchStats")


def kernel_members(figures: dict[str, Any]) -> dict[str, Any]:
    return {member: figures[member] for member in MEMBERS}


def analysed(files: dict[str, bytes], name: str) -> dict[str, Any]:
    """The kernels' members of ``name`` as the analysis gives them in this process."""
    (trace,) = analyze_file(name, BytesSource(files[name]))
    members: dict[str, Any] = orjson.loads(orjson.dumps(kernels_json(trace.analysis.kernels)))
    return members


def ranks_pages(api: httpx.Client, traceset_id: str, limit: int) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    cursor = None
    while True:
        params: dict[str, Any] = (
            {"limit": limit} if cursor is None else {"limit": limit, "cursor": cursor}
        )
        answer = api.get(f"/api/v1/tracesets/{traceset_id}/ranks", params=params)
        assert answer.status_code == 200, answer.text
        items += answer.json()["items"]
        cursor = answer.json()["nextCursor"]
        if cursor is None:
            return items


def test_each_ranks_kernel_figures_are_served_as_analysed(
    api: httpx.Client, tmp_path: Path
) -> None:
    files = run_files(Run(tp=2, dp=2, steps=3, seed=7))
    traceset = upload(api, files, {"parallelism": {"tp": 2, "dp": 2}})
    inspection = inspected(api, traceset["id"])["inspection"]
    assert inspection["status"] == "done"
    expected = {f"rank-{r}.json.gz": analysed(files, f"rank-{r}.json.gz") for r in range(4)}
    for members in expected.values():
        assert members["topKernels"] and members["kernelTypes"] and members["idleBreakdown"]
        assert members["launchStats"]["launches"] > 0
        for idle in members["idleBreakdown"]:  # each cause's share of its stream's idle time
            shares = [idle[f"{cause}Pct"] for cause in ("hostWait", "kernelWait", "other")]
            assert sum(shares) == pytest.approx(100, abs=0.02)
    served = {figures["file"]: kernel_members(figures) for figures in inspection["perRank"]}
    assert served == expected
    paged = {
        figures["file"]: kernel_members(figures) for figures in ranks_pages(api, traceset["id"], 3)
    }
    assert paged == expected

    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    local = as_json(run_tracesets("inspect", tmp_path, "--json", env={}))
    assert {Path(f["file"]).name: kernel_members(f) for f in local["perRank"]} == expected
    assert local["kernelSpread"] == inspection["kernelSpread"]


def test_a_kernel_slow_on_one_rank_has_it_as_its_max_rank(api: httpx.Client) -> None:
    files = run_files(Run(tp=2, dp=2, steps=10, seed=11, slow={2: 3.0}))
    traceset = upload(api, files, {"parallelism": {"tp": 2, "dp": 2}})
    inspection = inspected(api, traceset["id"])["inspection"]
    spread = inspection["kernelSpread"]
    sums: dict[str, dict[int, float]] = {}
    for figures in inspection["perRank"]:
        for row in figures["topKernels"]:
            if row["name"] != "other":
                sums.setdefault(row["name"], {})[figures["rank"]] = row["sumUs"]
    assert [k["name"] for k in spread] == sorted(sums, key=lambda n: -sum(sums[n].values()))
    computation = [k for k in spread if k["type"] == "COMPUTATION"]
    assert len(computation) == 4
    for kernel in computation:
        of_rank = sums[kernel["name"]]
        assert kernel["ranks"] == 4 and kernel["maxRank"] == 2, kernel
        assert kernel["maxUs"] == of_rank[2] > 2 * kernel["medianUs"]
        assert (kernel["minUs"], kernel["maxUs"]) == (min(of_rank.values()), max(of_rank.values()))
        assert of_rank[kernel["minRank"]] == kernel["minUs"] and kernel["minRank"] != 2
