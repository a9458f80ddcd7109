"""What a new user meets on the command line: where the command is, what ``inspect`` and
``show`` say of the traces, every id of a ``delete`` tried, conflicts named, nothing cut."""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.cli.test_cli import Run, ok, run_tracesets
from tests.flows import inspected, send, upload
from tests.inspection.kineto_writer import kineto_trace
from tests.server import BIN, ServerProcess
from tracesets.cli.server import command_hint


@pytest.fixture
def nowhere_env(unreachable: str) -> dict[str, str]:
    """Settings of a service where nothing listens: every answer comes from local checks."""
    return {"TRACESETS_URL": unreachable, "TRACESETS_TOKEN": "tsk_unused"}


LONG = "mtia_rank_{rank}_of_a_training_job_with_a_long_descriptive_name_20261201T050000.json"


@pytest.fixture
def disagreeing(tmp_path: Path) -> Path:
    """Traces that give the world sizes 1, 2, 128 and 300; ranks 0 (twice), 1 and 34."""
    run = tmp_path / "traces"
    run.mkdir()
    for rank, world_size, copy in ((0, 1, ""), (1, 2, ""), (34, 128, ""), (0, 300, "-again")):
        name = LONG.format(rank=rank).replace(".json", f"{copy}.json")
        (run / name).write_bytes(kineto_trace(rank, world_size))
    return run


def test_the_banner_says_where_the_command_is_when_a_shell_would_not_find_it() -> None:
    hint = "\n".join(command_hint("/usr/bin:/bin"))
    assert str(BIN) in hint and f"export PATH={BIN.parent}:$PATH" in hint
    assert command_hint(f"{BIN.parent}:/usr/bin") == []


@pytest.fixture
def restarted(tmp_path: Path) -> Iterator[ServerProcess]:
    """A service on a data folder with a space in its name, started a second time: its
    first token was printed once and is gone, as a returning user finds it."""
    process = ServerProcess(tmp_path / "my traces" / "tracesets-data")
    del process.env["TRACESETS_BOOTSTRAP_TOKEN"]
    process.start()
    process.stop()
    process.log.write_text("")
    process.start()
    yield process
    process.stop()


def test_the_restart_banner_names_a_token_command_the_service_accepts(
    restarted: ServerProcess, tmp_path: Path
) -> None:
    banner = restarted.log.read_text().splitlines()
    hint = banner[banner.index("Token: a bootstrap or earlier token; make another with") + 1]
    command = hint.split("   (")[0].strip()
    assert "--data-dir '" in command and str(restarted.data_dir) in command, hint
    # A new shell elsewhere: another directory, the default data folder somewhere else.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {k: v for k, v in restarted.env.items() if k != "TRACESETS_DATA_DIR"}
    env |= {"HOME": str(elsewhere), "PATH": f"{BIN.parent}:{os.environ['PATH']}"}
    made = subprocess.run(
        ["bash", "-c", command],
        env=env,
        cwd=elsewhere,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    token = made.stdout.strip()
    answer = httpx.get(
        f"{restarted.url}/api/v1/whoami",
        headers={"Authorization": f"Bearer {token}"},
        timeout=60,
    )
    assert answer.status_code == 200, answer.text


def test_inspect_reports_missing_ranks_per_world_size_when_the_traces_disagree(
    disagreeing: Path,
) -> None:
    done = ok(run_tracesets("inspect", disagreeing, env={"COLUMNS": "80"}))
    lines = done.stdout.splitlines()
    heading = lines.index("missing ranks: unknown, the traces disagree on the world size; if it is")
    per_size = ["  1: none", "  2: none", "  128: 2-33, 35-127", "  300: 2-33, 35-299"]
    assert lines[heading + 1 : heading + 5] == per_size
    assert "duplicated ranks: rank 0 (2 files)" in lines
    for rank in (0, 1, 34):  # in 80 columns, piped: never cut
        assert LONG.format(rank=rank) in done.stdout
    assert "…" not in done.stdout


def test_no_duplicated_rank_reads_none(tmp_path: Path) -> None:
    (tmp_path / "rank0.json").write_bytes(kineto_trace(0, 2))
    done = ok(run_tracesets("inspect", tmp_path, env={}))
    assert "duplicated ranks: none" in done.stdout.splitlines()


def test_inferring_from_disagreeing_traces_says_why_and_what_to_pass(
    disagreeing: Path, nowhere_env: dict[str, str]
) -> None:
    done = run_tracesets("upload", disagreeing, "--infer-rank-count", env=nowhere_env)
    assert done.returncode == 1
    assert "the traces disagree on the world size (1, 2, 128, 300)" in done.stderr
    assert "--rank-count N" in done.stderr and "--dp" in done.stderr
    assert "no answer" not in done.stderr, "nothing was sent"


def test_a_missing_rank_count_names_the_options_that_declare_one(
    disagreeing: Path, nowhere_env: dict[str, str]
) -> None:
    done = run_tracesets("upload", disagreeing, env=nowhere_env)
    assert done.returncode == 1
    assert "workloadMetadata.shape.rankCount" in done.stderr
    assert "On the command line: --rank-count N, or the parallelism degrees --dp" in done.stderr


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["--rank-count", "256", "--set", "shape.rankCount=2.0"], "--rank-count 256"),
        (["--dp", "4", "--set", 'parallelism={"dp": 8}'], "--dp 4"),
        (["--rank-count", "8", "--token", ""], "--token is empty"),
    ],
)
def test_conflicting_options_are_usage_errors(
    disagreeing: Path, args: list[str], named: str, nowhere_env: dict[str, str]
) -> None:
    done = run_tracesets("upload", disagreeing, *args, env=nowhere_env)
    assert done.returncode == 2, done.stderr
    assert named in done.stderr


def test_set_alongside_options_for_other_members_is_fine(
    tmp_path: Path, nowhere_env: dict[str, str]
) -> None:
    (tmp_path / "rank0.json").write_bytes(kineto_trace(0, 8))
    done = run_tracesets(
        "upload",
        tmp_path,
        "--rank-count",
        "8",
        "--set",
        "shape.global_batch_size=512",
        env=nowhere_env,
    )
    assert done.returncode == 1 and "no answer" in done.stderr  # got as far as the service


def test_an_empty_token_does_not_fall_back_to_the_environment(
    tracesets: Run, api: httpx.Client
) -> None:
    done = tracesets("list", "--token", "")
    assert done.returncode == 2 and "--token is empty" in done.stderr


def test_delete_tries_every_id_and_reports_each(tracesets: Run, api: httpx.Client) -> None:
    first = upload(api, {"rank0.json": b"x"}, name="first")["id"]
    second = upload(api, {"rank0.json": b"x"}, name="second")["id"]
    done = tracesets("delete", first, "no-such-traceset", second)
    assert done.returncode == 1
    assert done.stdout.splitlines() == [f"deleted {first}", f"deleted {second}"]
    assert "not deleted no-such-traceset" in done.stderr and "1 of 3 not deleted" in done.stderr
    assert api.get("/api/v1/tracesets").json()["items"] == []


def test_show_prints_the_inspection(tracesets: Run, api: httpx.Client) -> None:
    files = {
        "rank0.json": kineto_trace(0, 4),
        "rank1.json": kineto_trace(1, 4),
        "copy/rank1.json": kineto_trace(1, 4),
    }
    traceset_id = upload(api, files, {"shape": {"rankCount": 4}})["id"]
    inspected(api, traceset_id)
    lines = ok(tracesets("show", traceset_id)).stdout.splitlines()
    assert "inspection: done" in lines
    assert "  world size: 4" in lines and "  ranks found: 0-1" in lines
    assert "  missing ranks: 2-3" in lines
    assert "  duplicated ranks: rank 1 (2 files)" in lines
    assert any(line.startswith("  warning: 2 of 4 declared ranks have no trace") for line in lines)


def test_show_of_a_traceset_without_traces_says_there_is_no_inspection(
    tracesets: Run, api: httpx.Client
) -> None:
    created = api.post(
        "/api/v1/tracesets/upload-url",
        json={"name": "notes", "files": [{"name": "notes.txt", "size": 1, "role": "supporting"}]},
    ).json()
    send(created["uploads"][0], b"x")
    traceset_id = created["tracesetId"]
    assert api.post(f"/api/v1/tracesets/{traceset_id}/complete").status_code == 200
    done = ok(tracesets("show", traceset_id))
    assert "inspection: none" in done.stdout


@pytest.mark.parametrize(
    "command",
    [
        [],
        ["upload"],
        ["list"],
        ["show"],
        ["promote"],
        ["download"],
        ["delete"],
        ["inspect"],
        ["serve"],
        ["worker"],
        ["token"],
        ["token", "create"],
        ["token", "list"],
        ["token", "revoke"],
    ],
)
def test_help_in_80_columns_cuts_nothing(command: list[str]) -> None:
    done = ok(run_tracesets(*command, "--help", env={"COLUMNS": "80"}))
    assert "…" not in done.stdout
    assert not re.search(r"\w\.\.\.$", done.stdout, re.MULTILINE), done.stdout
    if command == ["upload"]:
        assert "shape.global_batch_size=512" in done.stdout


def test_sizes_are_decimal_units(tracesets: Run, api: httpx.Client) -> None:
    traceset_id = upload(api, {"rank0.json": b"x" * 4_194_304})["id"]
    shown = ok(tracesets("show", traceset_id)).stdout
    assert "4.2 MB" in shown and "MiB" not in shown
    assert json.loads(ok(tracesets("show", traceset_id, "--json")).stdout)["id"] == traceset_id
