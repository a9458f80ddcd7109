"""Per-rank figures over HTTP: in the inspection, paged, checked across ranks, filtered."""

from __future__ import annotations

import gzip

import httpx
import orjson

from tests.analysis.run_writer import Run, rank_trace
from tests.flows import inspected, problems, upload
from tracesets.analysis import analyze_file
from tracesets.analysis.report import rank_json
from tracesets.inspection import BytesSource


def run_files(run: Run) -> dict[str, bytes]:
    return {
        f"rank-{r}.json.gz": gzip.compress(rank_trace(run, r), mtime=0) for r in range(run.world)
    }


def test_the_inspection_shows_each_ranks_figures(api: httpx.Client) -> None:
    run = Run(tp=2, dp=2, steps=3, seed=4)
    files = run_files(run)
    traceset = upload(api, files, {"parallelism": {"tp": 2, "dp": 2}})
    inspection = inspected(api, traceset["id"])["inspection"]
    assert inspection["status"] == "done" and inspection["warnings"] == []
    assert inspection["perRankCount"] == 4
    assert [r["rank"] for r in inspection["perRank"]] == [0, 1, 2, 3]
    for figures in inspection["perRank"]:
        (trace,) = analyze_file(figures["file"], BytesSource(files[figures["file"]]))
        assert figures == orjson.loads(orjson.dumps(rank_json(figures["rank"], trace)))
        assert figures["steps"]["count"] == 3 and figures["gpu"]["computePct"] > 0
    assert (inspection["stragglers"], inspection["desyncedGroups"]) == ([], [])


def test_disagreeing_ranks_are_warned_of_and_filtered(api: httpx.Client) -> None:
    healthy = upload(api, run_files(Run(tp=2, dp=2, steps=3)), {"shape": {"rankCount": 4}})
    broken_run = Run(tp=2, dp=3, steps=4, skip={3: 1}, slow={0: 2.0})
    broken = upload(api, run_files(broken_run), {"parallelism": {"tp": 2, "dp": 3}})
    assert inspected(api, healthy["id"])["inspection"]["warnings"] == []
    inspection = inspected(api, broken["id"])["inspection"]
    group, _ = broken_run.dp_group(3)
    assert inspection["desyncedGroups"] == [group]
    assert inspection["stragglers"] == [0]
    assert [r["straggler"] for r in inspection["perRank"]] == [True, *[False] * 5]
    assert any(w.startswith(f"Process group {group} ") for w in inspection["warnings"])
    assert any(w.startswith("Rank 0 straggles") for w in inspection["warnings"])

    def listed(**params: bool) -> list[str]:
        answer = api.get("/api/v1/tracesets", params=params)
        assert answer.status_code == 200, answer.text
        return [t["id"] for t in answer.json()["items"]]

    assert listed(ranks_consistent=True) == [healthy["id"]]
    assert listed(ranks_consistent=False) == [broken["id"]]
    assert listed(ranks_consistent=False, inspected_ok=False) == [broken["id"]]


def test_every_ranks_figures_page_by_page(api: httpx.Client) -> None:
    run = Run(tp=5, dp=1, steps=2, cpu_only=True)
    traceset = upload(api, run_files(run), {"shape": {"rankCount": 5}})
    inline = inspected(api, traceset["id"])["inspection"]["perRank"]
    pages, cursor = [], None
    while True:
        params: dict[str, str | int] = {"limit": 2}
        if cursor:
            params["cursor"] = cursor
        answer = api.get(f"/api/v1/tracesets/{traceset['id']}/ranks", params=params)
        assert answer.status_code == 200, answer.text
        pages.append(answer.json()["items"])
        cursor = answer.json()["nextCursor"]
        if cursor is None:
            break
    assert [len(page) for page in pages] == [2, 2, 1]
    assert [figures for page in pages for figures in page] == inline
    assert all(f["gpu"] is None and f["steps"]["count"] == 2 for f in inline)


def test_the_per_rank_route_refuses_what_it_cannot_answer(api: httpx.Client) -> None:
    traceset = upload(api, run_files(Run(tp=1, dp=1, steps=1)), {"shape": {"rankCount": 1}})
    bad = api.get(f"/api/v1/tracesets/{traceset['id']}/ranks", params={"cursor": "nope"})
    assert bad.status_code == 400 and problems(bad)[0]["member"] == "cursor"
    missing = api.get("/api/v1/tracesets/ts_00000000000000000000000000/ranks")
    assert missing.status_code == 404
