"""``tracesets upload FILE --job-key K --rank R --world-size N``: one shell step per rank."""

from __future__ import annotations

import json
import secrets
from pathlib import Path

from tests.cli.test_cli import Run, as_json, ok
from tests.inspection.kineto_writer import kineto_trace


def test_ranks_sent_one_by_one_make_one_traceset_the_last_completes(
    tracesets: Run, tmp_path: Path
) -> None:
    key = "slurm-" + secrets.token_hex(4)
    traces = []
    for rank in range(3):
        path = tmp_path / f"host{rank}" / "worker.1234.pt.trace.json"
        path.parent.mkdir()
        path.write_bytes(kineto_trace(rank, 3, size=20_000, seed=rank))
        traces.append(path)
    step = ["--job-key", key, "--world-size", "3"]
    first = ok(tracesets("upload", traces[0], *step, "--rank", "0"))
    traceset_id, _ = first.stdout.split(maxsplit=1)
    assert "rank 0 sent as rank0.pt.trace.json; traceset pending" in first.stdout
    assert "waiting for ranks (2 of 3): 1-2" in first.stdout
    again = ok(tracesets("upload", traces[0], *step, "--rank", "0"))  # a retried step
    assert again.stdout.split()[0] == traceset_id
    ok(tracesets("upload", traces[2], *step, "--rank", "2"))
    shown = ok(tracesets("show", traceset_id))
    assert "missing ranks (1 of 3): 1" in shown.stdout
    last = ok(tracesets("upload", traces[1], *step, "--rank", "1"))
    assert "traceset ready" in last.stdout and "waiting" not in last.stdout
    traceset = as_json(tracesets("show", traceset_id, "--json"))
    assert traceset["status"] == "ready" and traceset["rankCountDerived"] == 3
    assert [f["name"] for f in traceset["files"]] == [
        "job.json",
        "rank0.pt.trace.json",
        "rank2.pt.trace.json",
        "rank1.pt.trace.json",
    ]
    ok(tracesets("download", traceset_id, "--dest", tmp_path / "copy"))
    manifest = json.loads((tmp_path / "copy" / "job.json").read_text())
    assert manifest == {"jobKey": key, "worldSize": 3}


def test_a_rank_step_says_what_is_missing_before_sending(tracesets: Run, tmp_path: Path) -> None:
    trace = tmp_path / "trace.json"
    trace.write_bytes(kineto_trace(0, 2, size=1_000, seed=0))
    done = tracesets("upload", trace, "--rank", "0", "--job-key", "k")
    assert done.returncode == 1 and "--rank and --world-size go together" in done.stderr
    done = tracesets("upload", trace, "--rank", "0", "--world-size", "2")
    assert done.returncode == 1 and "No job key" in done.stderr
    done = tracesets("upload", trace, "--rank", "2", "--world-size", "2", "--job-key", "k")
    assert done.returncode == 1 and "rank must be from 0 to 1" in done.stderr
    done = tracesets(
        "upload", trace, "--rank", "0", "--world-size", "2", "--job-key", "k", "--dp", "3"
    )
    assert done.returncode == 1 and "must equal the product" in done.stderr
    assert as_json(tracesets("list", "--json")) == []


def test_add_files_sends_more_files_into_a_pending_traceset(tracesets: Run, tmp_path: Path) -> None:
    first = tmp_path / "rank0.json"
    first.write_bytes(kineto_trace(0, 2, size=2_000, seed=0))
    step = ["--job-key", "k-" + secrets.token_hex(4), "--world-size", "2", "--rank", "0"]
    traceset_id = ok(tracesets("upload", first, *step)).stdout.split()[0]
    more = tmp_path / "more"
    more.mkdir()
    (more / "rank1.json").write_bytes(kineto_trace(1, 2, size=2_000, seed=1))
    (tmp_path / "train.log").write_text("step 1\n")
    added = ok(tracesets("add-files", traceset_id, more, "--supporting", tmp_path / "train.log"))
    assert "added 2 files" in added.stdout and "pending" in added.stdout
    again = ok(tracesets("add-files", traceset_id, more, "--complete"))
    assert "ready, 4 files" in again.stdout
    traceset = as_json(tracesets("show", traceset_id, "--json"))
    assert {f["name"]: f["role"] for f in traceset["files"]} == {
        "job.json": "supporting",
        "rank0.json": "primary",
        "rank1.json": "primary",
        "train.log": "supporting",
    }
    refused = tracesets("add-files", traceset_id, more)
    assert refused.returncode == 1 and "only while a traceset is pending" in refused.stderr
