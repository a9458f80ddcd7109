"""A real training job, 4 ranks of torch.distributed (gloo, CPU), each sending its own
profiler trace through ``tracesets.torch.trace_handler`` into one traceset."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import httpx

from tests.flows import inspected
from tests.server import ServerProcess

WORLD = 4
ROOT = Path(__file__).resolve().parents[2]
#: Generous: 4 processes importing torch on a small shared machine; a hang fails, not waits.
DEADLINE = 600


def run_job(
    server: ServerProcess, token: str, store: Path, victim: int | None = None
) -> list[subprocess.CompletedProcess[str]]:
    ranks = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.torch.rank",
                str(rank),
                str(WORLD),
                str(store),
                server.url,
                token,
                *(["--die-before-upload"] if rank == victim else []),
            ],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for rank in range(WORLD)
    ]
    finished = []
    for process in ranks:
        out, err = process.communicate(timeout=DEADLINE)
        finished.append(subprocess.CompletedProcess(process.args, process.returncode, out, err))
    return finished


def test_every_rank_sends_its_trace_and_the_last_completes(
    server: ServerProcess, api: httpx.Client, workspace_token: str, tmp_path: Path
) -> None:
    ranks = run_job(server, workspace_token, tmp_path / "store")
    assert [r.returncode for r in ranks] == [0] * WORLD, [r.stderr[-2000:] for r in ranks]
    [traceset_id] = {r.stdout.split()[0] for r in ranks}
    assert "ready" in {r.stdout.split()[1] for r in ranks}
    traceset = inspected(api, traceset_id, timeout=120)
    assert traceset["status"] == "ready"
    assert traceset["rankCountDerived"] == WORLD
    assert sorted(f["name"] for f in traceset["files"]) == [
        f"rank{r}.pt.trace.json.gz" for r in range(WORLD)
    ]
    assert all(f["received"] and f["role"] == "primary" for f in traceset["files"])
    inspection = traceset["inspection"]
    assert inspection["status"] == "done"
    assert inspection["ranksFound"] == list(range(WORLD))
    assert inspection["worldSize"] == WORLD
    assert inspection["missingRanks"] == [] and inspection["duplicateRanks"] == []
    # Every rank issued the same collectives, and the traces agree with the declared shape.
    # A straggler warning alone is allowed: four processes share this machine's cores, so
    # which rank's steps run slower is up to the scheduler, not to the job.
    assert inspection["desyncedGroups"] == []
    timing = [w for w in inspection["warnings"] if " straggles: " in w]
    assert inspection["warnings"] == timing, inspection["warnings"]
    assert len(timing) == len(inspection["stragglers"])
    assert {(f["rank"], f["worldSize"], f["rankSource"]) for f in inspection["files"]} == {
        (r, WORLD, "header") for r in range(WORLD)
    }


def test_a_rank_that_dies_leaves_the_traceset_pending_and_is_named(
    server: ServerProcess, api: httpx.Client, workspace_token: str, tmp_path: Path
) -> None:
    ranks = run_job(server, workspace_token, tmp_path / "store", victim=2)
    assert ranks[2].returncode == -9
    survivors = [r for i, r in enumerate(ranks) if i != 2]
    assert [r.returncode for r in survivors] == [0] * 3, [r.stderr[-2000:] for r in survivors]
    [traceset_id] = {r.stdout.split()[0] for r in survivors}
    assert {r.stdout.split()[1] for r in survivors} == {"pending"}
    traceset = api.get(f"/api/v1/tracesets/{traceset_id}").json()
    assert traceset["status"] == "pending" and traceset["rankCountDerived"] == WORLD
    assert sorted(f["name"] for f in traceset["files"]) == [
        "rank0.pt.trace.json.gz",
        "rank1.pt.trace.json.gz",
        "rank3.pt.trace.json.gz",
    ]
    status = api.get(f"/api/v1/tracesets/{traceset_id}/uploads").json()
    assert sorted(status["received"]) == sorted(f["name"] for f in traceset["files"])
    shown = server.cli("show", traceset_id, "--url", server.url, "--token", workspace_token)
    assert shown.returncode == 0, shown.stderr
    assert "missing ranks (1 of 4): 2" in shown.stdout
