"""The ``tracesets`` command as a subprocess against a real service: no terminal, so plain
progress lines; exit codes 0 (done), 1 (refused by a rule or the service), 2 (usage)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.inspection.kineto_writer import kineto_trace
from tests.server import BIN, ServerProcess
from tracesets import Client

Run = Callable[..., subprocess.CompletedProcess[str]]
SETTINGS = ("TRACESETS_URL", "TRACESETS_TOKEN", "SCALA_API_TOKEN")
STEP_LINE = re.compile(
    r"uploading  [1-9]0%  [\d.]+ [kM]?B / 1\.6 MB  [0-5]/5 files  [\d.]+ [kMG]?B/s  "
    r"\d+:\d\d:\d\d left"
)


def run_tracesets(
    *args: str | Path, env: dict[str, str], cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k not in SETTINGS}
    return subprocess.run(
        [str(BIN), *map(str, args)],
        env={**clean, "COLUMNS": "100", **env},
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    run = tmp_path / "gpt-run-7"
    (run / "logs").mkdir(parents=True)
    for rank in range(4):  # real-looking traces: upload reads their ranks before sending
        (run / f"rank{rank}.json").write_bytes(kineto_trace(rank, 4, size=400_000, seed=rank))
    (run / "logs" / "train.log").write_text("step 1\n")
    return run


def ok(done: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    assert done.returncode == 0, (done.stdout, done.stderr)
    return done


def as_json(done: subprocess.CompletedProcess[str]) -> Any:
    return json.loads(ok(done).stdout)


def test_done_when(
    tracesets: Run, run_dir: Path, server: ServerProcess, workspace_token: str
) -> None:
    """One command uploads a directory with visible progress; `list --workload-family` finds
    it; Python promotes it; a refusal names the member, the value and the rule."""
    done = ok(
        tracesets(
            "upload",
            run_dir,
            "--rank-count",
            "4",
            "--dp",
            "2",
            "--tp",
            "2",
            "--set",
            "workload_family=gpt",
            "--set",
            "shape.global_batch_size=512",
            "--supporting",
            run_dir / "logs",
        )
    )
    lines = done.stderr.splitlines()
    assert lines[0] == "uploading 5 files, 1.6 MB"
    assert lines[1].startswith("hashed 1.6 MB in ")
    steps = [line for line in lines[2:-1] if STEP_LINE.fullmatch(line)]
    assert steps and steps == lines[2:-1]  # each tenth of the way at most once, in order
    assert len(steps) <= 9
    assert lines[-1].startswith("uploaded 1.6 MB in ") and lines[-1].endswith("/s)")
    assert "\x1b[" not in done.stderr + done.stdout  # no terminal, no escape codes
    traceset_id, name, status = done.stdout.split()[:3]
    assert name == '"gpt-run-7"' and status == "ready,"
    assert "4 ranks" in done.stdout

    listed = ok(tracesets("list", "--workload-family", "gpt")).stdout.splitlines()
    assert listed[0].split() == ["ID", "NAME", "STATUS", "RANKS", "FILES", "SIZE", "CREATED"]
    assert listed[1].split()[:6] == [traceset_id, "gpt-run-7", "ready", "4", "5", "1.6"]
    assert ok(tracesets("list", "--workload-family", "llama")).stdout == ""

    with Client(server.url, workspace_token) as client:
        client.wait_for_inspection(traceset_id)  # else promotion says it has not finished
        promoted = client.promote_traceset(traceset_id)
    assert promoted.status == "promoted" and promoted.warnings == []

    refused = tracesets("upload", run_dir, "--rank-count", "8", "--dp", "3")
    assert refused.returncode == 1 and refused.stdout == ""
    assert refused.stderr.splitlines() == [
        "error: refused by the upload rules; nothing was sent",
        "  workloadMetadata.shape.rankCount = 8: When both forms are given, shape.rankCount must "
        "equal the product: shape.rankCount is 8, the product dp=3 is 3",
    ]


def test_upload_stores_the_metadata_the_options_describe(
    tracesets: Run, run_dir: Path, tmp_path: Path
) -> None:
    file = tmp_path / "metadata.json"
    file.write_text(
        '{"workload_name": "base", "shape": {"rankCount": 4, "dropout": 0.10}, "precision": "bf16"}'
    )
    traceset = as_json(
        tracesets(
            "upload",
            run_dir / "rank0.json",
            run_dir / "rank1.json",
            "--metadata",
            file,
            "--name",
            "two ranks",
            "--pp",
            "4",
            "--cp",
            "2",
            "--set",
            "shape.global_batch_size=512",
            "--set",
            "workload_name=llama 3",
            "--set",
            "flags=[true, null]",
            "--set",
            'quoted="7"',
            "--json",
        )
    )
    assert traceset["name"] == "two ranks" and traceset["rankCountDerived"] == 4
    assert [f["name"] for f in traceset["files"]] == ["rank0.json", "rank1.json"]
    assert traceset["workloadMetadata"] == {
        "workload_name": "llama 3",
        "shape": {"rankCount": 4, "dropout": 0.10, "global_batch_size": 512},
        "precision": "bf16",
        "parallelism": {"pp": 4, "cp": 2},
        "flags": [True, None],
        "quoted": "7",
    }


def test_the_rules_refuse_before_any_request(run_dir: Path, unreachable: str) -> None:
    """Nothing listens at the URL: the answer can only come from the local rules."""
    env = {"TRACESETS_URL": unreachable, "TRACESETS_TOKEN": "tsk_unused"}
    done = run_tracesets(
        "upload", run_dir, "--set", "shape.rankCount=2.0", "--set", "parallelism.dp=0", env=env
    )
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        "error: refused by the upload rules; nothing was sent",
        "  workloadMetadata.shape.rankCount = 2.0: workloadMetadata.shape.rankCount must be a "
        "whole number of at least 1; got 2.0",
        "  workloadMetadata.parallelism.dp = 0: workloadMetadata.parallelism.dp must be a whole "
        "number of at least 1; got 0",
    ]
    missing = run_tracesets("upload", run_dir, env=env)
    assert missing.returncode == 1
    assert "Uploads with primary trace files must declare a rank count" in missing.stderr
    supporting_only = run_tracesets(
        "upload", "--supporting", run_dir / "logs", run_dir / "logs", env=env
    )
    assert supporting_only.returncode == 1 and "no answer" in supporting_only.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["upload"],
        ["upload", "no/such/path", "--rank-count", "1"],
        ["upload", ".", "--rank-count", "four"],
        ["upload", ".", "--set", "no-equals-sign"],
        ["upload", ".", "--set", "shape..x=1"],
        ["upload", ".", "--unknown-option"],
        ["list", "--limit", "-1"],
        ["frobnicate"],
    ],
)
def test_usage_errors_exit_2(args: list[str], tmp_path: Path, unreachable: str) -> None:
    (tmp_path / "a").write_bytes(b"a")
    done = run_tracesets(*args, env={"TRACESETS_URL": unreachable}, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""


def test_a_metadata_file_that_is_not_json_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "a").write_bytes(b"a")
    (tmp_path / "m.json").write_text('{"shape": {"rankCount": 1,}}')
    done = run_tracesets("upload", tmp_path / "a", "--metadata", tmp_path / "m.json", env={})
    assert done.returncode == 2 and "Malformed JSON" in done.stderr
    (tmp_path / "m.json").write_text('{"shape": 4}')
    done = run_tracesets(
        "upload",
        tmp_path / "a",
        "--metadata",
        tmp_path / "m.json",
        "--set",
        "shape.rankCount=1",
        env={},
    )
    assert done.returncode == 2 and "shape is 4, not an object" in done.stderr


def test_service_refusals_exit_1(tracesets: Run, server: ServerProcess) -> None:
    done = tracesets("show", "no-such-id")
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        "error: the service refused it (404 Not found)",
        '  id = "no-such-id": No traceset no-such-id in this workspace',
    ]
    unknown = tracesets("list", env={"TRACESETS_TOKEN": "tsk_not_a_real_token_000000"})
    assert unknown.returncode == 1 and "401 Unauthorized" in unknown.stderr
    nothing = run_tracesets("list", env={"TRACESETS_URL": server.url})
    assert nothing.returncode == 1 and "No token" in nothing.stderr


def test_url_and_token_options_override_the_environment(
    server: ServerProcess, workspace_token: str, unreachable: str
) -> None:
    wrong = {"TRACESETS_URL": unreachable, "TRACESETS_TOKEN": "tsk_wrong"}
    done = run_tracesets(
        "list", "--json", "--url", server.url, "--token", workspace_token, env=wrong
    )
    assert json.loads(ok(done).stdout) == []
    scala = run_tracesets(
        "list", "--json", env={"TRACESETS_URL": server.url, "SCALA_API_TOKEN": workspace_token}
    )
    assert json.loads(ok(scala).stdout) == []


def test_list_filters_limits_and_json(tracesets: Run, tmp_path: Path) -> None:
    (tmp_path / "a").write_bytes(b"a")
    made = []
    for i in range(3):
        made.append(
            as_json(
                tracesets(
                    "upload",
                    tmp_path / "a",
                    "--name",
                    f"t{i}",
                    "--rank-count",
                    str(2 + i % 2),
                    "--set",
                    f"workload_name=w{i}",
                    "--set",
                    f"shape.global_batch_size={64 * (i + 1)}",
                    "--json",
                )
            )["id"]
        )
    assert [t["id"] for t in as_json(tracesets("list", "--json"))] == made[::-1]
    assert [t["id"] for t in as_json(tracesets("list", "--json", "--rank-count", "3"))] == [made[1]]
    assert [t["id"] for t in as_json(tracesets("list", "--json", "--workload-name", "w2"))] == [
        made[2]
    ]
    assert [t["id"] for t in as_json(tracesets("list", "--json", "--global-batch-size", "64"))] == [
        made[0]
    ]
    assert as_json(tracesets("list", "--json", "--status", "promoted")) == []
    limited = ok(tracesets("list", "--json", "--limit", "2"))
    assert [t["id"] for t in json.loads(limited.stdout)] == made[:0:-1]
    assert "--limit 0 shows all" in limited.stderr
    assert tracesets("list", "--status", "done").returncode == 1  # the service's 400


def test_show_promote_download_delete(tracesets: Run, run_dir: Path, tmp_path: Path) -> None:
    traceset = as_json(
        tracesets(
            "upload", run_dir, "--rank-count", "4", "--json", "--supporting", run_dir / "logs"
        )
    )
    traceset_id = traceset["id"]
    shown = ok(tracesets("show", traceset_id)).stdout
    assert "logs/train.log" in shown and '"rankCount": 4' in shown
    assert as_json(tracesets("show", traceset_id, "--json"))["files"] == traceset["files"]

    promoted = ok(tracesets("promote", traceset_id, "--set", "workloadFamily=gpt"))
    assert "promoted" in promoted.stdout
    assert "warning:" in promoted.stderr and "workload_family" in promoted.stderr
    refused = tracesets(
        "promote",
        traceset_id,
        "--set",
        "parallelism.fsdp=3",
        "--set",
        "parallelism.dp=2",
        "--set",
        "parallelism.tp=2",
    )
    assert refused.returncode == 1 and "parallelism.fsdp = 3" in refused.stderr
    stored = as_json(tracesets("show", traceset_id, "--json"))["workloadMetadata"]
    assert stored == {"shape": {"rankCount": 4}, "workloadFamily": "gpt"}

    dest = tmp_path / "down"
    saved = ok(tracesets("download", traceset_id, "--dest", dest))
    assert saved.stdout.startswith(f"5 files in {dest}: 5 downloaded (1.6 MB in ")
    assert saved.stdout.endswith("), 0 already there\n")
    for f in traceset["files"]:
        assert hashlib.sha256((dest / f["name"]).read_bytes()).hexdigest() == f["sha256"]
    one = ok(tracesets("download", traceset_id, "logs/train.log", "--dest", tmp_path / "one"))
    assert one.stdout.startswith(f"1 file in {tmp_path / 'one'}: 1 downloaded (7 bytes in ")
    assert [p.name for p in (tmp_path / "one").rglob("*") if p.is_file()] == ["train.log"]
    refused = tracesets("download", traceset_id, "nope.json")
    assert refused.returncode == 1 and "'nope.json'" in refused.stderr

    assert ok(tracesets("delete", traceset_id)).stdout.strip() == f"deleted {traceset_id}"
    assert tracesets("show", traceset_id).returncode == 1
    assert tracesets("delete", traceset_id).returncode == 1


def test_resume_sends_only_what_has_not_arrived(
    tracesets: Run, run_dir: Path, server: ServerProcess, workspace_token: str
) -> None:
    with Client(server.url, workspace_token) as client:
        created = client.request_upload_urls(
            name="half",
            files=[
                {"name": p.name, "size": p.stat().st_size, "role": "primary"}
                for p in sorted(run_dir.glob("*.json"))
            ],
            workload_metadata={"shape": {"rankCount": 4}},
        )
    first = created.uploads[0]
    assert first.url is not None
    assert (
        httpx.put(first.url, content=(run_dir / first.name).read_bytes(), timeout=60).status_code
        == 200
    )
    done = ok(tracesets("upload", *sorted(run_dir.glob("*.json")), "--resume", created.tracesetId))
    assert "ready, 4 files" in done.stdout
    assert done.stderr.splitlines()[-1].startswith("uploaded 1.2 MB in ")


def test_server_commands_still_work(tmp_path: Path) -> None:
    done = run_tracesets(
        "token", "create", "--workspace", "w1", "--data-dir", tmp_path / "data", env={}
    )
    assert ok(done).stdout.startswith("tsk_")
    bad = run_tracesets(
        "token", "create", "--workspace", "", "--data-dir", tmp_path / "data", env={}
    )
    assert bad.returncode == 2 and "--workspace must be 1 to 128 characters" in bad.stderr
    assert "Start the service" in ok(run_tracesets("serve", "--help", env={})).stdout
