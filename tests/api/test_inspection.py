"""Inspection after complete: what the traces say about their ranks, over HTTP."""

from __future__ import annotations

import io
import zipfile

import httpx

from tests.conftest import TRACES
from tests.flows import inspected, send, spec, upload
from tests.inspection.kineto_writer import gzipped, kineto_trace


def zip_of_ranks(ranks: list[int], world_size: int) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for copy, rank in enumerate(ranks):
            name = (
                f"rank{rank}.json" if ranks.index(rank) == copy else f"copy{copy}/rank{rank}.json"
            )
            archive.writestr(name, kineto_trace(rank, world_size))
    return buffer.getvalue()


def test_a_zip_of_8_ranks_declaring_16_names_the_8_missing(api: httpx.Client) -> None:
    traceset = upload(
        api, {"traces.zip": zip_of_ranks(list(range(8)), 8)}, {"shape": {"rankCount": 16}}
    )
    assert traceset["inspection"]["status"] == "pending", "inspection never runs inside complete"
    inspection = inspected(api, traceset["id"])["inspection"]
    assert inspection["status"] == "done"
    assert inspection["ranksFound"] == list(range(8)) and inspection["worldSize"] == 8
    assert inspection["missingRanks"] == list(range(8, 16)) and inspection["missingRankCount"] == 8
    assert any("8 of 16" in w for w in inspection["warnings"]), inspection["warnings"]
    assert {f["member"] for f in inspection["files"]} == {f"rank{r}.json" for r in range(8)}
    assert all(
        f["rankSource"] == "header" and f["file"] == "traces.zip" for f in inspection["files"]
    )


def test_traces_that_agree_are_inspected_ok(api: httpx.Client) -> None:
    files = {f"rank{r}.json.gz": gzipped(kineto_trace(r, 4)) for r in range(4)}
    agree = upload(api, files, {"parallelism": {"dp": 2, "tp": 2}})
    disagree = upload(api, {"traces.zip": zip_of_ranks([0, 1, 1], 2)}, {"shape": {"rankCount": 2}})
    assert inspected(api, agree["id"])["inspection"]["warnings"] == []
    duplicated = inspected(api, disagree["id"])["inspection"]
    assert duplicated["duplicateRanks"] == [1] and duplicated["warnings"]
    ok = api.get("/api/v1/tracesets", params={"inspected_ok": True}).json()["items"]
    not_ok = api.get("/api/v1/tracesets", params={"inspected_ok": False}).json()["items"]
    assert [t["id"] for t in ok] == [agree["id"]] and [t["id"] for t in not_ok] == [disagree["id"]]


def test_promotion_repeats_what_the_traces_disagree_with(api: httpx.Client) -> None:
    traceset = upload(api, {"traces.zip": zip_of_ranks([0, 1], 2)}, {"shape": {"rankCount": 4}})
    inspection = inspected(api, traceset["id"])["inspection"]
    answer = api.post(f"/api/v1/tracesets/{traceset['id']}/promote", json={})
    assert answer.status_code == 200, "traces of only some ranks inform, they do not refuse"
    assert set(inspection["warnings"]) <= set(answer.json()["warnings"])


def test_real_pytorch_traces_report_their_ranks_and_world_size(api: httpx.Client) -> None:
    files = {
        name: (TRACES / name).read_bytes()
        for name in ("sampled_rank-0.json.gz", "sampled_rank-1.json.gz")
    }
    traceset = upload(api, files, {"shape": {"rankCount": 128}})
    inspection = inspected(api, traceset["id"])["inspection"]
    assert inspection["ranksFound"] == [0, 1] and inspection["worldSize"] == 128
    assert inspection["missingRankCount"] == 126
    assert {f["backend"] for f in inspection["files"]} == {"nccl"}


def test_supporting_files_only_have_no_inspection(api: httpx.Client) -> None:
    body = {"name": "logs", "files": [spec("run.log", b"log", "supporting")]}
    created = api.post("/api/v1/tracesets/upload-url", json=body).json()
    send(created["uploads"][0], b"log")
    done = api.post(f"/api/v1/tracesets/{created['tracesetId']}/complete").json()
    assert done["status"] == "ready" and done["inspection"] is None


def test_unreadable_traces_are_named(api: httpx.Client) -> None:
    traceset = upload(api, {"rank0.json": b"\x1f\x8b\x08garbage"}, {"shape": {"rankCount": 1}})
    inspection = inspected(api, traceset["id"])["inspection"]
    assert inspection["status"] == "done" and inspection["unreadable"] == ["rank0.json"]
    assert inspection["files"][0]["problem"]
