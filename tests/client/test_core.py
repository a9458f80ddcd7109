"""The client core without any I/O: an upload's steps driven by hand, answers made up.

What both clients do is decided here, step by step; ``Client`` and ``AsyncClient`` only
perform the steps, so these tests hold for both.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from tests.client.test_retries import traceset_json
from tracesets.client import protocol
from tracesets.client.answers import TracesetAnswer, UploadStatusAnswer, WhoamiAnswer
from tracesets.client.core import ClientCore, UploadPlan
from tracesets.client.errors import ClientError
from tracesets.client.files import collect, hash_file, undigested
from tracesets.client.models import Traceset, UploadUrlResponse, Whoami
from tracesets.client.state import UploadState, fingerprint
from tracesets.client.steps import Call, Hash, HashAhead, Hashed, Puts, PutsDone, StartPuts

NOW = "2026-01-01T00:00:00.000Z"


def core(tmp_path: Path) -> ClientCore:
    state = UploadState(tmp_path / "state.json")
    return ClientCore(
        "http://service.test", "tok", timeout=5, concurrency=2, retry=None, state=state
    )


def plan_of(tmp_path: Path) -> UploadPlan:
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "rank0.json").write_bytes(os.urandom(300))
    (folder / "rank1.json").write_bytes(os.urandom(200))
    return UploadPlan.checked(
        collect(folder), name="run", workload_metadata={"shape": {"rankCount": 2}}
    )


def created(body: dict[str, Any]) -> UploadUrlResponse:
    return UploadUrlResponse.model_validate(
        {
            "tracesetId": "t1",
            "uploads": [
                {"name": f["name"], "role": f["role"], "method": "PUT",
                 "url": f"http://store.test/{f['name']}", "headers": {}, "expiresAt": NOW}
                for f in body["files"]
            ],
        }
    )  # fmt: skip


def remembered_as(client: ClientCore, upload: UploadPlan) -> str:
    """The key of an upload: what it declares before any file is read."""
    return fingerprint(client.url, "tok", upload.body([undigested(f) for f in upload.files]))


def test_an_upload_is_whoami_hash_upload_url_puts_complete(tmp_path: Path) -> None:
    client, upload = core(tmp_path), plan_of(tmp_path)
    flow = client._upload_flow(upload, None, None, 0)

    step = next(flow)
    assert isinstance(step, Call) and (step.method, step.path) == ("GET", "/api/v1/whoami")
    step = flow.send(Whoami(workspace="w", scopes=["read", "write"], multipartThreshold=None))
    assert isinstance(step, HashAhead) and [f.sha256 for f in step.files] == [None, None]
    assert step.parts_above is None  # the store takes no file in parts: none hashed
    files = step.files
    assert flow.send(None) == Hashed(2)
    step = flow.send([hash_file(f) for f in files])
    assert isinstance(step, Call) and step.path == "/api/v1/tracesets/upload-url"
    assert step.expect == 201 and len(step.headers["Idempotency-Key"]) == 36
    assert all(len(f["sha256"]) == 64 for f in step.body["files"])
    step = flow.send(created(step.body))
    assert isinstance(step, StartPuts) and (step.total, step.count) == (500, 2)
    step = flow.send(None)
    assert isinstance(step, Puts)
    assert [(p.file.name, p.url, p.length) for p in step.puts] == [
        ("rank0.json", "http://store.test/rank0.json", 300),
        ("rank1.json", "http://store.test/rank1.json", 200),
    ]
    # Remembered under what it declares before any file is read, until it completes.
    assert client.state._read() == {remembered_as(client, upload): "t1"}
    assert isinstance(flow.send(None), PutsDone)
    step = flow.send(None)
    assert isinstance(step, Call) and step.path == "/api/v1/tracesets/t1/complete"
    with pytest.raises(StopIteration) as done:
        flow.send(Traceset.model_validate(traceset_json("t1")))
    assert done.value.value.id == "t1" and client.state._read() == {}


@pytest.mark.parametrize(
    ("said", "parts_above"),
    [
        ({"multipartThreshold": 64 * 2**20}, 64 * 2**20),  # S3: parts above its threshold
        ({"multipartThreshold": None}, None),  # local files: no parts
        ({}, 0),  # a service that does not say: parts wherever S3 could take them
    ],
)
def test_the_hashing_computes_part_digests_where_whoami_says_there_are_parts(
    tmp_path: Path, said: dict[str, Any], parts_above: int | None
) -> None:
    """A new upload's hashing ahead and a remembered upload's hashing alike."""
    client, upload = core(tmp_path), plan_of(tmp_path)
    who = WhoamiAnswer.read({"workspace": "w", "scopes": ["write"], **said})
    assert who.multipartThreshold == parts_above
    flow = client._upload_flow(upload, None, None, 0)
    next(flow)
    hashing = flow.send(who)
    assert isinstance(hashing, HashAhead) and hashing.parts_above == parts_above

    key = remembered_as(client, upload)
    client.state.remember(key, "t0")  # as an upload cut short leaves it
    flow = client._upload_flow(upload, None, None, 0)
    next(flow)
    hashing_all = flow.send(who)
    assert isinstance(hashing_all, Hash) and hashing_all.parts_above == parts_above


def test_adding_files_checks_the_token_then_hashes_parts_only_where_the_store_takes_them(
    tmp_path: Path,
) -> None:
    """``add_local_files`` (``tracesets add``, ``send_file``): whoami first, as an upload."""
    client, upload = core(tmp_path), plan_of(tmp_path)
    flow = client._add_local_flow("t1", upload.files, None)
    step = next(flow)
    assert isinstance(step, Call) and step.path == "/api/v1/whoami"
    hashing = flow.send(Whoami(workspace="w", scopes=["write"], multipartThreshold=None))
    assert isinstance(hashing, Hash) and hashing.parts_above is None
    flow = client._add_local_flow("t1", upload.files, None)
    next(flow)
    with pytest.raises(ClientError) as refused:
        flow.send(Whoami(workspace="w", scopes=["read"], multipartThreshold=None))
    assert refused.value.status == 403  # before any file is read


def test_a_resume_hashes_no_part_its_declaration_signed_already(tmp_path: Path) -> None:
    """``resume_files`` (``tracesets upload --resume``): the files still to send were
    declared with their parts' digests when the upload began; only the whole file's
    sha256 is checked against the traceset, so no part is hashed again."""
    client, upload = core(tmp_path), plan_of(tmp_path)
    flow = client._resume_flow("t1", upload.files, None, None)
    status = next(flow)
    assert isinstance(status, Call) and status.path == "/api/v1/tracesets/t1/uploads"
    uploads = [
        {
            "name": f.name,
            "role": "primary",
            "method": "PUT",
            "url": f"http://store.test/{f.name}",
            "headers": {},
            "expiresAt": "2026-12-02T00:00:00.000Z",
        }
        for f in upload.files
    ]
    raw = {"tracesetId": "t1", "status": "pending", "received": [], "uploads": uploads}
    read = flow.send(UploadStatusAnswer.read({**raw, "nextCursor": None}))
    assert isinstance(read, Call) and read.path == "/api/v1/tracesets/t1"
    hashing = flow.send(TracesetAnswer.read(traceset_json("t1", "pending")))
    assert isinstance(hashing, Hash) and hashing.parts_above is None
    assert [f.name for f in hashing.files] == ["rank0.json", "rank1.json"]


def test_a_failed_put_names_the_traceset_and_keeps_it_for_a_resume(tmp_path: Path) -> None:
    client, upload = core(tmp_path), plan_of(tmp_path)
    flow = client._upload_flow(upload, None, None, 0)
    next(flow)
    hashing = flow.send(Whoami(workspace="w", scopes=["write"], multipartThreshold=None))
    assert isinstance(hashing, HashAhead)
    assert flow.send(None) == Hashed(2)
    asked = flow.send([hash_file(f) for f in hashing.files])
    assert isinstance(asked, Call)
    assert isinstance(flow.send(created(asked.body)), StartPuts)
    assert isinstance(flow.send(None), Puts)
    assert isinstance(flow.send(None), PutsDone)
    with pytest.raises(ClientError) as failed:
        flow.throw(ClientError("PUT rank1.json answered 403", status=403))
    assert failed.value.traceset_id == "t1"
    assert list(client.state._read().values()) == ["t1"]  # running it again resumes t1


def test_a_token_without_write_stops_before_any_hashing(tmp_path: Path) -> None:
    flow = core(tmp_path)._upload_flow(plan_of(tmp_path), None, None, 0)
    next(flow)
    with pytest.raises(ClientError) as refused:
        flow.send(Whoami(workspace="w", scopes=["read"], multipartThreshold=None))
    assert refused.value.status == 403


def test_an_upload_past_one_batch_declares_the_rest_with_add_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two files a request: upload-url declares two, add-files the third, and the PUTs
    cover all three; the resume key is the whole upload's, not the first batch's."""
    monkeypatch.setattr(protocol, "BATCH_FILES", 2)
    client = core(tmp_path)
    plan_of(tmp_path)  # the folder of two ranks, and a third
    (tmp_path / "run" / "rank2.json").write_bytes(os.urandom(100))
    upload = UploadPlan.checked(
        collect(tmp_path / "run"), name="run", workload_metadata={"shape": {"rankCount": 3}}
    )
    flow = client._upload_flow(upload, None, None, 0)
    next(flow)
    hashing = flow.send(Whoami(workspace="w", scopes=["write"], multipartThreshold=None))
    assert isinstance(hashing, HashAhead) and len(hashing.files) == 3  # all, in the background
    files = [hash_file(f) for f in hashing.files]
    assert flow.send(None) == Hashed(2)
    first = flow.send(files[:2])
    assert isinstance(first, Call) and first.path == "/api/v1/tracesets/upload-url"
    assert [f["name"] for f in first.body["files"]] == ["rank0.json", "rank1.json"]
    assert isinstance(flow.send(created(first.body)), StartPuts)
    puts = flow.send(None)
    assert isinstance(puts, Puts)
    names = [p.file.name for p in puts.puts]
    assert flow.send(None) == Hashed(1)  # the next batch, hashed while the first is sent
    rest = flow.send(files[2:])
    assert isinstance(rest, Call) and (rest.method, rest.path) == (
        "POST",
        "/api/v1/tracesets/t1/files",
    )
    assert [f["name"] for f in rest.body["files"]] == ["rank2.json"]
    puts = flow.send(created(rest.body))
    assert isinstance(puts, Puts)
    assert sorted([*names, *(p.file.name for p in puts.puts)]) == [
        "rank0.json",
        "rank1.json",
        "rank2.json",
    ]
    assert isinstance(flow.send(None), PutsDone)
    assert client.state._read() == {remembered_as(client, upload): "t1"}


def test_the_first_request_is_small_and_the_later_ones_grow(tmp_path: Path) -> None:
    """Sending starts after the first files are read; each later request declares up to
    four times as many files (or bytes of them) as the one before, split before any file
    is read, so a rerun declares the very same batches."""
    folder = tmp_path / "job"
    folder.mkdir()
    for rank in range(200):
        (folder / f"rank{rank:02d}.json").write_bytes(b"{}")
    files = collect(folder)
    batches = ClientCore._batches(files)
    assert [len(b) for b in batches] == [8, 32, 128, 32]
    assert [f for b in batches for f in b] == files
    big = [replace(f, size=16 * 2**20) for f in files[:40]]
    assert [len(b) for b in ClientCore._batches(big)] == [2, 8, 30]  # 32, 128, 512 MiB
