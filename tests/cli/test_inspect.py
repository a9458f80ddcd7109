"""``tracesets inspect`` and what ``tracesets upload`` reads in the traces before sending."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.analysis.run_writer import Run as RunShape
from tests.analysis.run_writer import rank_trace
from tests.cli.test_cli import Run, ok, run_tracesets
from tests.conftest import TRACES
from tests.inspection.kineto_writer import gzipped, kineto_trace


@pytest.fixture
def eight_of_sixteen(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    run.mkdir()
    for rank in range(8):
        (run / f"rank{rank}.json.gz").write_bytes(gzipped(kineto_trace(rank, 16)))
    return run


def test_inspect_prints_the_per_rank_table_and_the_missing_ranks(eight_of_sixteen: Path) -> None:
    done = ok(run_tracesets("inspect", eight_of_sixteen, env={}))
    assert "rank7.json.gz" in done.stdout and "kineto-json-gzip" in done.stdout
    assert "ranks found: 0-7" in done.stdout and "missing ranks: 8-15" in done.stdout
    assert "world size: 16" in done.stdout


def test_inspect_json_of_the_real_traces() -> None:
    traces = TRACES
    done = ok(run_tracesets("inspect", traces / "nccl_data.json.gz", "--json", env={}))
    report = json.loads(done.stdout)
    assert report["ranksFound"] == [0] and report["worldSize"] == 2
    assert report["files"][0]["rankSource"] in ("header", "tail")


def test_upload_without_a_rank_count_proposes_the_world_size_before_any_request(
    eight_of_sixteen: Path, unreachable: str
) -> None:
    nowhere = {"TRACESETS_URL": unreachable, "TRACESETS_TOKEN": "tsk_unused"}
    done = run_tracesets("upload", eight_of_sixteen, env=nowhere)
    assert done.returncode == 1
    assert "world size is 16" in done.stderr and "--infer-rank-count" in done.stderr
    assert "nothing was sent" in done.stderr


def test_upload_infers_the_rank_count_when_asked(tracesets: Run, eight_of_sixteen: Path) -> None:
    done = ok(tracesets("upload", eight_of_sixteen, "--infer-rank-count", "--json"))
    assert json.loads(done.stdout)["rankCountDerived"] == 16


def test_upload_warns_before_sending_when_the_traces_disagree(
    eight_of_sixteen: Path, unreachable: str
) -> None:
    nowhere = {"TRACESETS_URL": unreachable, "TRACESETS_TOKEN": "tsk_unused"}
    done = run_tracesets("upload", eight_of_sixteen, "--rank-count", "32", env=nowhere)
    warning = done.stderr.index("warning:")
    assert "32" in done.stderr[warning:]
    assert done.returncode == 1, "then the request fails: nothing listens there"
    assert warning < done.stderr.index("error:"), "the warning comes before any request"


def test_inspect_shows_per_rank_figures_and_stragglers(tmp_path: Path) -> None:
    run = RunShape(tp=2, dp=2, steps=3, slow={2: 2.0})
    for rank in range(run.world):
        (tmp_path / f"rank-{rank}.json").write_bytes(rank_trace(run, rank))
    report = json.loads(ok(run_tracesets("inspect", tmp_path, "--json", env={})).stdout)
    assert [r["rank"] for r in report["perRank"]] == [0, 1, 2, 3]
    assert report["perRankCount"] == 4 and report["stragglers"] == [2]
    assert all(r["gpu"]["computePct"] > 0 and r["steps"]["count"] == 3 for r in report["perRank"])
    assert any(w.startswith("Rank 2 straggles") for w in report["warnings"])
    table = ok(run_tracesets("inspect", tmp_path, env={}))
    assert "per-rank figures" in table.stdout and "2 (straggler)" in table.stdout
