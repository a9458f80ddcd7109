"""Both Python clients read the traces' ranks before sending, as ``tracesets upload`` does:
traces that contradict the declared rank count are refused in the same words, unless the
caller says to upload them anyway; traces of only some ranks go through."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.client.conftest import MakeClient
from tests.inspection.kineto_writer import gzipped, kineto_trace
from tests.server import ServerProcess
from tracesets import ClientError
from tracesets.client.traceranks import RankCountContradicted


@pytest.fixture
def eight_of_sixteen(tmp_path: Path) -> Path:
    """Ranks 0 to 7 of a job whose traces say its world size is 16."""
    run = tmp_path / "run"
    run.mkdir()
    for rank in range(8):
        (run / f"rank{rank}.json.gz").write_bytes(gzipped(kineto_trace(rank, 16)))
    return run


def test_traces_that_contradict_the_rank_count_are_refused_before_any_request(
    eight_of_sixteen: Path, unreachable: str, make_client: MakeClient
) -> None:
    """Nothing listens at the URL: the refusal can only come from the client itself."""
    nowhere = make_client(unreachable, "tsk_unused")
    with pytest.raises(ClientError) as caught:
        nowhere.upload(eight_of_sixteen, name="run", workload_metadata={"shape": {"rankCount": 32}})
    error = caught.value
    assert isinstance(error, RankCountContradicted) and error.sent is False
    lines = str(error).splitlines()
    assert lines[0] == (
        "the traces contradict the declared rank count (32 ranks); nothing was sent:"
    )
    assert "  8 traces say the world size is 16, but the workload metadata declares 32 ranks." in (
        lines
    )
    assert "  24 of 32 declared ranks have no trace: 8-31." in lines
    assert lines[-1] == (
        "Declare 16 ranks, as the traces hold (workloadMetadata shape.rankCount, or the "
        "parallelism degrees): it cannot change after upload. Or pass ignore_trace_ranks=True "
        "to upload anyway."
    )


def test_a_rank_not_below_the_declared_count_is_refused(
    eight_of_sixteen: Path, unreachable: str, make_client: MakeClient
) -> None:
    (eight_of_sixteen / "rank15.json.gz").write_bytes(gzipped(kineto_trace(15, 16)))
    with pytest.raises(RankCountContradicted) as caught:
        make_client(unreachable, "tsk_unused").upload(
            eight_of_sixteen, name="run", workload_metadata={"parallelism": {"dp": 4, "tp": 2}}
        )
    assert "  1 of the ranks found is not below the 8 declared ranks: 15." in (
        str(caught.value).splitlines()
    )


def test_ignore_trace_ranks_uploads_them_anyway(
    eight_of_sixteen: Path, server: ServerProcess, workspace_token: str, make_client: MakeClient
) -> None:
    traceset = make_client(server.url, workspace_token).upload(
        eight_of_sixteen,
        name="run",
        workload_metadata={"shape": {"rankCount": 32}},
        ignore_trace_ranks=True,
    )
    assert traceset.status == "ready" and traceset.rankCountDerived == 32


def test_traces_of_only_some_ranks_upload(
    eight_of_sixteen: Path, server: ServerProcess, workspace_token: str, make_client: MakeClient
) -> None:
    traceset = make_client(server.url, workspace_token).upload(
        eight_of_sixteen, name="run", workload_metadata={"shape": {"rankCount": 16}}
    )
    assert traceset.status == "ready" and traceset.rankCountDerived == 16
