"""A comparison's operators of the first step agree with HTA's ``TraceDiff.compare_traces``
on its defaults (the first rank, the first iteration, CPU operators and GPU kernels):
counts exactly, durations within 1 µs, on runs with known differences and on real traces."""

from __future__ import annotations

import logging
import secrets
import shutil
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from hta.trace_diff import TraceDiff

from tests.analysis.run_writer import Run, write_run
from tests.api.test_compare import paged
from tests.flows import inspected, upload
from tests.server import ServerProcess
from tracesets.analysis.operators import STEPS

pytestmark = pytest.mark.filterwarnings("ignore::Warning:hta.*", "ignore::Warning:pandas.*")

TRACES = Path(__file__).resolve().parents[1] / "data" / "traces"


@pytest.fixture(scope="module")
def api(server: ServerProcess) -> Iterator[httpx.Client]:
    token = server.new_token("ws-" + secrets.token_hex(6))
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=server.url, headers=headers, timeout=60) as client:
        yield client


def uploaded(api: httpx.Client, directory: Path) -> str:
    files = {p.name: p.read_bytes() for p in sorted(directory.iterdir())}
    ranks = len(files)
    traceset = upload(api, files, {"shape": {"rankCount": ranks}})
    done = inspected(api, traceset["id"])
    assert done["inspection"]["status"] == "done", done["inspection"]
    return str(traceset["id"])


def assert_agrees(api: httpx.Client, control: Path, test: Path) -> None:
    logging.getLogger("hta").setLevel(logging.ERROR)
    theirs = TraceDiff.compare_traces(str(control), str(test))
    path = f"/api/v1/tracesets/{uploaded(api, test)}/compare/{uploaded(api, control)}/operators"
    ours = {r["name"]: r for page in paged(api, path, step="first") for r in page}
    assert STEPS not in ours  # the steps' own events keep their names in the first step
    expected = {str(name): row for name, row in theirs.to_dict("index").items()}
    assert len(expected) > 10 and set(ours) == set(expected)
    for name, row in expected.items():
        mine = ours[name]
        assert (mine["baselineCount"], mine["count"]) == (
            row["Control_counts"],
            row["Test_counts"],
        ), name
        assert mine["baselineTotalUs"] == pytest.approx(row["Control_total_duration"], abs=1)
        assert mine["totalUs"] == pytest.approx(row["Test_total_duration"], abs=1)


def test_two_runs_with_known_differences(api: httpx.Client, tmp_path: Path) -> None:
    write_run(tmp_path / "control", Run(tp=2, dp=1, steps=4, seed=1))
    write_run(tmp_path / "test", Run(tp=2, dp=1, steps=4, kernels_per_step=30, seed=9))
    assert_agrees(api, tmp_path / "control", tmp_path / "test")


def test_real_traces(api: httpx.Client, tmp_path: Path) -> None:
    """Two real ranks against a real trace of another job: most names on one side only."""
    for side, names in (("control", ["sampled_rank-0.json.gz"]), ("test", ["nccl_data.json.gz"])):
        (tmp_path / side).mkdir()
        for name in names:
            shutil.copy(TRACES / name, tmp_path / side / name)
    assert_agrees(api, tmp_path / "control", tmp_path / "test")
