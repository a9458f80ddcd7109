"""Running the same upload again resumes it: the client keeps a small state file."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import httpx
import pytest

from tests.client.conftest import MakeClient
from tests.server import ServerProcess
from tracesets import ClientError
from tracesets.client import RetryPolicy
from tracesets.client.core import UploadPlan
from tracesets.client.files import collect
from tracesets.client.state import UploadState

RANKS = {"shape": {"rankCount": 2}}


class LosesPutsTo(httpx.HTTPTransport):
    """The real network, except that PUTs of one file never get through."""

    def __init__(self, name_index: str) -> None:
        super().__init__()
        self.marker = name_index
        self.puts: list[str] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if request.method == "PUT":
            self.puts.append(request.url.path)
            if request.url.path.endswith(self.marker):
                raise httpx.ConnectError("lost", request=request)
        return super().handle_request(request)


def sent(path: str) -> str:
    """The traceset and file index a PUT went to: ``/api/v1/blobs/ID/1`` or, on S3,
    ``/BUCKET/PREFIX/ID/1``."""
    return "/".join(path.split("/")[-2:])


@pytest.fixture
def traces(tmp_path: Path) -> Path:
    folder = tmp_path / "run"
    folder.mkdir()
    # The client sends larger files first: rank1 goes last, and it is the one lost.
    (folder / "rank0.json").write_bytes(os.urandom(60_000))
    (folder / "rank1.json").write_bytes(os.urandom(50_000))
    return folder


def test_an_interrupted_upload_resumes_when_run_again(
    server: ServerProcess,
    workspace_token: str,
    traces: Path,
    tmp_path: Path,
    make_client: MakeClient,
) -> None:
    state = UploadState(tmp_path / "state.json")
    lossy = LosesPutsTo("/1")  # the second file's signed URL ends with its index
    first = make_client(
        server.url, workspace_token, transport=lossy, retry=RetryPolicy(retries=0), state=state
    )
    with pytest.raises(ClientError) as failed:
        first.upload(traces, name="resumable", workload_metadata=RANKS)
    started = failed.value.traceset_id
    assert started is not None and state.path.exists()
    # A signed URL's path ends with the traceset and the file's index, on either storage.
    # Both PUTs start at once: which reaches the transport first is the scheduler's.
    assert sorted(sent(p) for p in lossy.puts) == [f"{started}/0", f"{started}/1"]

    counting = LosesPutsTo("never")
    second = make_client(server.url, workspace_token, transport=counting, state=state)
    done = second.upload(traces, name="resumable", workload_metadata=RANKS)
    assert done.id == started and done.status == "ready"
    assert [sent(p) for p in counting.puts] == [f"{started}/1"], "only what had not arrived"
    assert [t.id for t in second.list_tracesets()] == [started]
    assert state.path.read_text() == "{}", "a finished upload leaves no entry"


def test_a_changed_file_is_a_new_upload(
    server: ServerProcess,
    workspace_token: str,
    traces: Path,
    tmp_path: Path,
    make_client: MakeClient,
) -> None:
    state = UploadState(tmp_path / "state.json")
    first = make_client(
        server.url,
        workspace_token,
        transport=LosesPutsTo("/1"),
        retry=RetryPolicy(retries=0),
        state=state,
    )
    with pytest.raises(ClientError):
        first.upload(traces, name="changing", workload_metadata=RANKS)
    (traces / "rank1.json").write_bytes(os.urandom(60_000))
    done = make_client(server.url, workspace_token, state=state).upload(
        traces, name="changing", workload_metadata=RANKS
    )
    assert done.status == "ready"
    assert len(list(make_client(server.url, workspace_token).list_tracesets())) == 2


def test_a_file_changed_in_place_is_a_new_upload(
    server: ServerProcess,
    workspace_token: str,
    traces: Path,
    tmp_path: Path,
    make_client: MakeClient,
) -> None:
    """The rerun finds the upload (same names, sizes and roles), hashes every file, and
    starts afresh because one declared file holds other bytes now: the new traceset has
    the new bytes, and the state remembers nothing once it is ready."""
    state = UploadState(tmp_path / "state.json")
    first = make_client(
        server.url,
        workspace_token,
        transport=LosesPutsTo("/1"),
        retry=RetryPolicy(retries=0),
        state=state,
    )
    with pytest.raises(ClientError) as failed:
        first.upload(traces, name="edited", workload_metadata=RANKS)
    (traces / "rank0.json").write_bytes(os.urandom(60_000))  # same size, other bytes
    client = make_client(server.url, workspace_token, state=state)
    done = client.upload(traces, name="edited", workload_metadata=RANKS)
    assert done.status == "ready" and done.id != failed.value.traceset_id
    digest = hashlib.sha256((traces / "rank0.json").read_bytes()).hexdigest()
    assert {f.name: f.sha256 for f in done.files}["rank0.json"] == digest
    assert state.path.read_text() == "{}"


def test_a_file_unreadable_past_the_first_batch_leaves_the_traceset_to_resume(
    server: ServerProcess, workspace_token: str, tmp_path: Path, make_client: MakeClient
) -> None:
    """Files are hashed while the first batch is sent: one that cannot be read in a later
    batch stops the upload once the traceset exists, and the error names it. With the
    file back, the same upload run again resumes that traceset."""
    folder = tmp_path / "job"
    folder.mkdir()
    for rank in range(10):  # the first batch holds 8
        (folder / f"rank{rank}.json").write_bytes(os.urandom(1_000 + rank))
    upload = UploadPlan.checked(
        collect(folder), name="job", workload_metadata={"shape": {"rankCount": 10}}
    )
    kept = (folder / "rank9.json").read_bytes()
    (folder / "rank9.json").unlink()  # gone between the walk and the hashing
    state = UploadState(tmp_path / "state.json")
    first = make_client(server.url, workspace_token, state=state)
    with pytest.raises(ClientError) as failed:
        first.upload_plan(upload)
    assert "rank9.json" in str(failed.value) and failed.value.traceset_id is not None

    (folder / "rank9.json").write_bytes(kept)
    done = make_client(server.url, workspace_token, state=state).upload_plan(upload)
    assert done.id == failed.value.traceset_id and done.status == "ready"
    assert len(done.files) == 10 and all(f.received for f in done.files)
    assert state.path.read_text() == "{}"
