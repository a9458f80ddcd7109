"""Both clients compare two tracesets on the real service: the answer typed, every page
of ranks, kernels and operators followed, and refusals raised with the service's words."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.analysis.run_writer import Run
from tests.api.test_compare import inspected_run, paged
from tests.api.test_rank_figures import run_files
from tests.client.conftest import MakeClient
from tests.server import ServerProcess
from tracesets import ClientError

Pair = tuple[str, str, str]


@pytest.fixture(scope="module")
def pair(server: ServerProcess) -> Iterator[Pair]:
    """A workspace's token, a traceset whose steps are 1.5 times slower, and its baseline."""
    token = server.new_token("ws-" + secrets.token_hex(6))
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=server.url, headers=headers, timeout=60) as api:
        baseline = inspected_run(api, Run(tp=2, dp=2, steps=3, seed=1))
        slower = Run(tp=2, dp=2, steps=3, seed=2, slow={r: 1.5 for r in range(4)})
        yield token, inspected_run(api, slower)["id"], baseline["id"]


def _raw(server: ServerProcess, token: str, path: str, **params: Any) -> Any:
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=server.url, headers=headers, timeout=60) as api:
        if path.endswith("/operators"):
            return [row for page in paged(api, path, **params) for row in page]
        answer = api.get(path)
        assert answer.status_code == 200, answer.text
        return answer.json()


def test_compare_types_the_answer(
    make_client: MakeClient, server: ServerProcess, pair: Pair
) -> None:
    token, traceset_id, baseline_id = pair
    raw = _raw(server, token, f"/api/v1/tracesets/{traceset_id}/compare/{baseline_id}")
    with make_client(server.url, token) as client:
        compared = client.compare(traceset_id, baseline_id)
    assert (compared.tracesetId, compared.baselineId) == (traceset_id, baseline_id)
    assert compared.perRankCompared and compared.ranksNextCursor is None
    assert [r.rank for r in compared.ranks] == [0, 1, 2, 3]
    assert all(r.present == "both" and r.diff is not None for r in compared.ranks)
    assert compared.headline.stepRatio == raw["headline"]["stepRatio"] > 1.2
    assert [c.name for c in compared.headline.contributors] == [
        c["name"] for c in raw["headline"]["contributors"]
    ]
    assert [(k.name, k.diffUs) for k in compared.kernels] == [
        (k["name"], k["diffUs"]) for k in raw["kernels"]
    ]


def test_ranks_kernels_and_operators_follow_every_page(
    make_client: MakeClient, server: ServerProcess, pair: Pair
) -> None:
    token, traceset_id, baseline_id = pair
    base = f"/api/v1/tracesets/{traceset_id}/compare/{baseline_id}"
    with make_client(server.url, token) as client:
        whole = client.compare(traceset_id, baseline_id)
        ranks = list(client.compare_ranks(traceset_id, baseline_id, page_size=3))
        kernels = list(client.compare_kernels(traceset_id, baseline_id, page_size=2))
        every_step = list(client.compare_operators(traceset_id, baseline_id, page_size=2))
        first_step = list(client.compare_operators(traceset_id, baseline_id, "first"))
    assert len(whole.kernels) > 2  # so that two to a page takes several pages
    assert ranks == whole.ranks
    assert kernels == whole.kernels
    for step, operators in (("all", every_step), ("first", first_step)):
        raw = _raw(server, token, base + "/operators", step=step, limit=1000)
        assert [o.model_dump() for o in operators] == raw


def test_refusals_raise_with_the_member_at_fault(
    make_client: MakeClient, server: ServerProcess, pair: Pair
) -> None:
    token, traceset_id, baseline_id = pair
    unknown = secrets.token_hex(16)
    with make_client(server.url, token) as client:
        with pytest.raises(ClientError) as same:
            client.compare(traceset_id, traceset_id)
        with pytest.raises(ClientError) as missing:
            list(client.compare_ranks(traceset_id, unknown))
        with pytest.raises(ClientError) as bad_step:
            list(client.compare_operators(traceset_id, baseline_id, "last"))  # type: ignore[arg-type]
    assert same.value.status == 400 and same.value.problems[0].member == "baselineId"
    assert missing.value.status == 404 and missing.value.problems[0].member == "baselineId"
    assert bad_step.value.status == 400 and bad_step.value.problems[0].member == "step"


def test_an_upload_names_its_baseline(
    make_client: MakeClient, server: ServerProcess, pair: Pair, tmp_path: Path
) -> None:
    token, _, baseline_id = pair
    run = Run(tp=2, dp=2, steps=3, seed=5)
    for name, data in run_files(run).items():
        (tmp_path / name).write_bytes(data)
    metadata = {"shape": {"rankCount": 4}}
    with make_client(server.url, token) as client:
        uploaded = client.upload(
            tmp_path, name="named", workload_metadata=metadata, baseline_id=baseline_id, wait=120
        )
        with pytest.raises(ClientError) as malformed:
            client.upload(tmp_path, name="bad", workload_metadata=metadata, baseline_id="last")
        with pytest.raises(ClientError) as unknown:
            client.upload(
                tmp_path, name="gone", workload_metadata=metadata, baseline_id=secrets.token_hex(16)
            )
    assert uploaded.baselineId == baseline_id
    assert uploaded.inspection is not None and uploaded.inspection.status == "done"
    assert not malformed.value.sent and malformed.value.problems[0].member == "baselineId"
    assert unknown.value.status == 400 and unknown.value.problems[0].member == "baselineId"
