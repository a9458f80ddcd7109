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
