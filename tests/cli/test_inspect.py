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


def test_traces_that_contradict_the_rank_count_stop_the_upload_before_any_request(
    eight_of_sixteen: Path, unreachable: str
) -> None:
    nowhere = {"TRACESETS_URL": unreachable, "TRACESETS_TOKEN": "tsk_unused"}
    done = run_tracesets("upload", eight_of_sixteen, "--rank-count", "32", env=nowhere)
    assert done.returncode == 1
    lines = done.stderr.splitlines()
    assert lines[0] == (
        "error: the traces contradict the declared rank count (32 ranks); nothing was sent:"
    )
    assert "  8 traces say the world size is 16, but the workload metadata declares 32 ranks." in (
        lines
    )
    assert "  24 of 32 declared ranks have no trace: 8-31." in lines
    assert lines[-1] == (
        "Declare 16 ranks, as the traces hold (--rank-count, or the parallelism degrees): it "
        "cannot change after upload. Or pass --ignore-trace-ranks to upload anyway."
    )


def test_a_contradiction_creates_nothing_and_the_flag_uploads_repeating_the_warnings(
    tracesets: Run, eight_of_sixteen: Path
) -> None:
    (eight_of_sixteen / "rank15.json.gz").write_bytes(gzipped(kineto_trace(15, 16)))
    stopped = tracesets("upload", eight_of_sixteen, "--dp", "4", "--tp", "2")
    assert stopped.returncode == 1 and stopped.stdout == ""
    assert "  1 of the ranks found is not below the 8 declared ranks: 15." in stopped.stderr
    assert "Or pass --ignore-trace-ranks to upload anyway." in stopped.stderr
    assert json.loads(ok(tracesets("list", "--json")).stdout) == []

    done = ok(
        tracesets("upload", eight_of_sixteen, "--dp", "4", "--tp", "2", "--ignore-trace-ranks")
    )
    assert "ready, 9 files" in done.stdout and "8 ranks" in done.stdout
    before, _, after = done.stderr.partition("uploaded ")
    said = [line for line in before.splitlines() if line.startswith("warning: ")]
    assert len(said) >= 2 and any("not below the 8 declared ranks: 15" in w for w in said)
    tail = after.splitlines()
    assert tail[1:] == [f"{len(said)} warnings from before the upload:"] + [f"  {w}" for w in said]
    assert len(json.loads(ok(tracesets("list", "--json")).stdout)) == 1


def test_traces_of_only_some_ranks_do_not_stop_the_upload(
    tracesets: Run, eight_of_sixteen: Path
) -> None:
    done = ok(tracesets("upload", eight_of_sixteen, "--rank-count", "16"))
    assert "ready, 8 files" in done.stdout
    assert done.stderr.splitlines()[-2:] == [
        "1 warning from before the upload:",
        "  warning: 8 of 16 declared ranks have no trace: 8-15.",
    ]


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


def test_inspect_gives_the_same_answer_whatever_the_processes(tmp_path: Path) -> None:
    """``--jobs 1`` reads in this process, ``--jobs 2`` in two: the same JSON and table,
    in the same order."""
    run = RunShape(tp=2, dp=36, steps=2, kernels_per_step=3, slow={5: 2.0})
    for rank in range(run.world):
        (tmp_path / f"rank-{rank}.json").write_bytes(rank_trace(run, rank))
    alone = ok(run_tracesets("inspect", tmp_path, "--json", "--jobs", "1", env={})).stdout
    shared = ok(run_tracesets("inspect", tmp_path, "--json", "--jobs", "2", env={})).stdout
    assert shared == alone and json.loads(alone)["perRankCount"] == 72
    tables = {ok(run_tracesets("inspect", tmp_path, "--jobs", jobs, env={})).stdout
              for jobs in ("1", "2")}  # fmt: skip
    assert len(tables) == 1 and "5 (straggler)" in tables.pop()
    refused = run_tracesets("inspect", tmp_path, "--jobs", "0", env={})
    assert refused.returncode == 2 and "--jobs" in refused.stderr


def test_the_per_rank_table_names_each_traces_file(tmp_path: Path) -> None:
    run = RunShape(tp=2, dp=1, steps=2, kernels_per_step=4)
    for name, rank in (("first/rank-0.json", 0), ("again/rank-0.json", 0), ("rank-1.json", 1)):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_bytes(rank_trace(run, rank))
    lines = ok(run_tracesets("inspect", tmp_path, env={})).stdout.splitlines()
    table = lines[next(i for i, line in enumerate(lines) if "per-rank figures" in line) :]
    cells = [
        [cell.strip() for cell in line.strip("┃│").split(line[0])] for line in table[1:] if line
    ]
    heading = next(row for row in cells if "step ms" in row)
    assert heading[:3] == ["rank", "file", "steps"]
    rows = {row[1]: row[0] for row in cells if len(row) > 1 and row[1].endswith(".json")}
    assert rows == {"first/rank-0.json": "0", "again/rank-0.json": "0", "rank-1.json": "1"}


def table_rows(stdout: str, title: str) -> list[list[str]]:
    """The cells of each row of the table titled ``title`` (its heading row first)."""
    lines = stdout.splitlines()
    titled = next(i for i, line in enumerate(lines) if title in line)
    start = next(i for i in range(titled, len(lines)) if lines[i].startswith("┏"))
    rows = []
    for line in lines[start:]:
        if not line or line[0] not in "┏┃┡│└":
            break
        if line[0] in "┃│":
            rows.append([cell.strip() for cell in line.strip("┃│").split(line[0])])
    return rows


def test_inspect_shows_idle_causes_and_with_kernels_each_ranks_top_kernels(
    tmp_path: Path,
) -> None:
    run = RunShape(tp=2, dp=1, steps=3)
    for rank in range(run.world):
        (tmp_path / f"rank-{rank}.json").write_bytes(rank_trace(run, rank))
    report = json.loads(ok(run_tracesets("inspect", tmp_path, "--json", env={})).stdout)

    plain = ok(run_tracesets("inspect", tmp_path, env={})).stdout
    assert "top kernels per rank" not in plain
    idle = table_rows(plain, "idle time by cause")
    assert idle[0] == ["rank", "stream", "host wait µs (%)", "kernel wait µs (%)", "other µs (%)"]
    assert idle[1:] == [
        [str(r["rank"]), str(s["stream"]),
         *(f"{s[m + 'Us']:,.1f} ({s[m + 'Pct']:.2f} %)" for m in ("hostWait", "kernelWait", "other"))]
        for r in report["perRank"] for s in r["idleBreakdown"]
    ]  # fmt: skip
    for s in (s for r in report["perRank"] for s in r["idleBreakdown"]):
        total = s["hostWaitUs"] + s["kernelWaitUs"] + s["otherUs"]
        for m in ("hostWait", "kernelWait", "other"):
            assert s[m + "Pct"] == pytest.approx(100 * s[m + "Us"] / total, abs=0.01)
    assert len(idle) > 3

    with_kernels = ok(run_tracesets("inspect", tmp_path, "--kernels", env={})).stdout
    kernels = table_rows(with_kernels, "top kernels per rank")
    assert kernels[0][:4] == ["rank", "kernel", "type", "count"]
    assert kernels[1:] == [
        [str(r["rank"]), k["name"], k["type"], f"{k['count']:,}",
         *(f"{k[m]:,.1f}" for m in ("sumUs", "meanUs", "minUs", "maxUs", "stddevUs"))]
        for r in report["perRank"] for k in r["topKernels"]
    ]  # fmt: skip
    assert {row[2] for row in kernels[1:]} == {"COMPUTATION", "COMMUNICATION", "MEMORY"}
