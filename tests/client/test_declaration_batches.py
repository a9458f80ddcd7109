"""An upload of more files than one request declares goes as upload-url, then add-files:
each request at most 4,000 files (so that S3's URLs for them fit in the answer) and half
the body limit of their JSON. (The same at
100,000 files: ``tests/api/test_hundred_thousand_ranks.py``.)"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.client.conftest import MakeClient
from tests.server import ServerProcess
from tracesets import jsontext
from tracesets.client import ClientError, RetryPolicy, protocol
from tracesets.client.state import UploadState
from tracesets.vocabulary import MAX_BODY_BYTES, MAX_FILES_PER_REQUEST, MAX_FILES_PER_TRACESET


def entries(count: int, name_bytes: int = 10) -> list[dict[str, object]]:
    return [
        {"name": f"{i:06d}".ljust(name_bytes, "x"), "size": 1, "role": "primary"}
        for i in range(count)
    ]


def test_many_small_files_go_4000_a_request_in_order() -> None:
    files = entries(25_001)
    batches = protocol.declaration_batches(files)
    assert protocol.BATCH_FILES == 4_000 <= MAX_FILES_PER_REQUEST
    assert [len(b) for b in batches] == [4_000] * 6 + [1_001]
    assert [f for b in batches for f in b] == files


def test_long_names_go_fewer_a_request_within_the_body_limit() -> None:
    files = entries(20_000, name_bytes=1_000)
    batches = protocol.declaration_batches(files)
    assert [f for b in batches for f in b] == files
    for batch in batches:
        assert len(jsontext.dumps({"files": batch})) <= MAX_BODY_BYTES // 2 + 1_024
    assert len(batches) > 2


def test_a_whole_upload_is_checked_against_what_a_traceset_holds() -> None:
    body = protocol.upload_url_body(
        name="job",
        files=entries(MAX_FILES_PER_TRACESET),
        workload_metadata={"shape": {"rankCount": MAX_FILES_PER_TRACESET}},
        description=None,
    )
    assert len(body["files"]) == MAX_FILES_PER_TRACESET
    with pytest.raises(ClientError) as refused:
        protocol.upload_url_body(
            name="job",
            files=entries(MAX_FILES_PER_TRACESET + 1),
            workload_metadata={"shape": {"rankCount": 8}},
            description=None,
        )
    assert refused.value.problems[0].member == "files"


class Recording(httpx.HTTPTransport):
    """The real network, with the last segment of each API POST noted; add-files can be
    made to fail as a lost connection."""

    def __init__(self, *, lose_add_files: bool = False) -> None:
        super().__init__()
        self.lose_add_files = lose_add_files
        self.posts: list[str] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if request.method == "POST":
            self.posts.append(request.url.path.rsplit("/", 1)[1])
            if self.lose_add_files and self.posts[-1] == "files":
                raise httpx.ConnectError("lost", request=request)
        return super().handle_request(request)


@pytest.fixture
def seven(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Seven files, three a request: upload-url, then add-files twice."""
    monkeypatch.setattr(protocol, "BATCH_FILES", 3)
    folder = tmp_path / "job"
    folder.mkdir()
    for rank in range(7):
        (folder / f"rank{rank}.json").write_bytes(b"{}" * (rank + 1))
    return folder


RANKS = {"shape": {"rankCount": 7}}
NAMES = [f"rank{rank}.json" for rank in range(7)]


def test_both_clients_upload_a_folder_in_batches(
    server: ServerProcess, workspace_token: str, seven: Path, make_client: MakeClient
) -> None:
    """The traceset holds all seven, each received."""
    recording = Recording()
    with make_client(server.url, workspace_token, transport=recording) as client:
        done = client.upload(seven, name="batched", workload_metadata=RANKS)
    assert recording.posts == ["upload-url", "files", "files", "complete"]
    assert done.status == "ready" and sorted(f.name for f in done.files) == NAMES
    assert all(f.received for f in done.files)


def test_a_rerun_declares_the_batches_an_interrupted_upload_did_not(
    server: ServerProcess,
    workspace_token: str,
    seven: Path,
    tmp_path: Path,
    make_client: MakeClient,
) -> None:
    """The first run stops after upload-url (its add-files lost); the same upload run
    again declares the other batches on the same traceset, sends all seven, completes."""
    state = UploadState(tmp_path / "state.json")
    lossy = Recording(lose_add_files=True)
    first = make_client(
        server.url, workspace_token, transport=lossy, retry=RetryPolicy(retries=0), state=state
    )
    with pytest.raises(ClientError):
        first.upload(seven, name="batched", workload_metadata=RANKS)
    assert lossy.posts == ["upload-url", "files"]
    (started,) = [t.id for t in first.list_tracesets()]

    recording = Recording()
    second = make_client(server.url, workspace_token, transport=recording, state=state)
    done = second.upload(seven, name="batched", workload_metadata=RANKS)
    assert recording.posts == ["files", "files", "complete"]
    assert done.id == started and done.status == "ready"
    assert sorted(f.name for f in done.files) == NAMES and all(f.received for f in done.files)
    assert state.path.read_text() == "{}"
