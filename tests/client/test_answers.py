"""The client's own readers of an upload's answers stay in step with the wire models, and
an upload from the command line never imports pydantic (nor, off a terminal, rich's
console).

Each reader is given the service's real answers; what it reads must be what the wire
model reads from the same JSON, and a traceset prints exactly as its wire model does.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.server import ServerProcess
from tracesets import Client, ClientError, jsontext
from tracesets.cli.progress import TERMINAL_VARIABLES
from tracesets.client import protocol
from tracesets.client.answers import (
    FileAnswer,
    TracesetAnswer,
    UploadStatusAnswer,
    UploadUrlAnswer,
    WhoamiAnswer,
)
from tracesets.client.steps import light
from tracesets.wire import Traceset, TracesetFile, UploadStatus, UploadUrlResponse, Whoami

TRACES = Path(__file__).resolve().parents[1] / "data" / "traces"


def same_members(answer: Any, model: Any) -> None:
    """Every member the reader has (but its own ``raw``) equals the wire model's."""
    for name in type(answer).__dataclass_fields__:
        if name in {"raw", "inspection_status"}:
            continue
        mine, theirs = getattr(answer, name), getattr(model, name)
        if isinstance(mine, list) and mine and hasattr(mine[0], "raw"):
            assert len(mine) == len(theirs)
            for one, other in zip(mine, theirs, strict=True):
                same_members(one, other)
        else:
            assert mine == theirs, name


def answer_of(server: ServerProcess, token: str, method: str, path: str, **kw: Any) -> Any:
    answer = httpx.request(
        method,
        f"{server.url}/api/v1{path}",
        headers={"Authorization": f"Bearer {token}"},
        timeout=120,
        **kw,
    )
    assert answer.is_success, answer.text[:300]
    return jsontext.loads(answer.content)


def test_each_reader_reads_what_its_wire_model_reads(
    server: ServerProcess, workspace_token: str, tmp_path: Path
) -> None:
    run = tmp_path / "run"
    run.mkdir()
    for rank in (0, 1):
        shutil.copy(TRACES / f"sampled_rank-{rank}.json.gz", run / f"rank{rank}.json.gz")
    with Client(server.url, workspace_token) as client:
        done = client.upload(  # traces of 128 ranks as 2: an inspection with warnings
            run,
            name="readers",
            workload_metadata={"shape": {"rankCount": 2}},
            wait=60,
            ignore_trace_ranks=True,
        )
    assert done.inspection is not None and done.inspection.status != "pending"
    got = answer_of(server, workspace_token, "GET", f"/tracesets/{done.id}")
    traceset = TracesetAnswer.read(got)
    same_members(traceset, Traceset.model_validate(got))
    assert traceset.inspection_status == done.inspection.status
    # What ``tracesets upload --json`` prints: every member and value the wire model
    # printed, datetimes written alike; members in the order the service sent them.
    model_dump = Traceset.model_validate(got).model_dump()
    printed = jsontext.dumps_indented(traceset.printed())
    assert jsontext.loads(printed) == jsontext.loads(jsontext.dumps_indented(model_dump))
    assert f'"createdAt": "{model_dump["createdAt"].isoformat().replace("+00:00", "Z")}"' in printed
    for item in got["files"]:
        same_members(FileAnswer.read(item), TracesetFile.model_validate(item))

    who = answer_of(server, workspace_token, "GET", "/whoami")
    same_members(WhoamiAnswer.read(who), Whoami.model_validate(who))

    body = {
        "name": "pending",
        "files": [{"name": "a.json", "size": 3, "role": "primary"}],
        "workloadMetadata": {"shape": {"rankCount": 1}},
    }
    created = answer_of(server, workspace_token, "POST", "/tracesets/upload-url", json=body)
    same_members(UploadUrlAnswer.read(created), UploadUrlResponse.model_validate(created))
    path = f"/tracesets/{created['tracesetId']}/uploads"
    status = answer_of(server, workspace_token, "GET", path)
    same_members(UploadStatusAnswer.read(status), UploadStatus.model_validate(status))
    assert UploadStatusAnswer.read(status).uploads[0].url is not None


@pytest.mark.parametrize(
    "body",
    [
        b"[]",
        b'{"tracesetId": "t"}',
        b'{"tracesetId": 7, "uploads": []}',
        b'{"tracesetId": "t", "uploads": [{"name": "a", "headers": {"x": 1}}]}',
        b"not json",
    ],
)
def test_an_answer_the_reader_cannot_read_is_a_clear_error(body: bytes) -> None:
    response = httpx.Response(201, content=body)
    with pytest.raises(ClientError, match="upload-url answered 201 with a body the client does"):
        light(UploadUrlAnswer.read, "upload-url")(response)
    assert protocol.plain({"a": 1}) == {"a": 1}


def test_an_upload_from_a_script_imports_neither_pydantic_nor_richs_console_nor_httpcore(
    server: ServerProcess, workspace_token: str, tmp_path: Path
) -> None:
    run = tmp_path / "run"
    run.mkdir()
    shutil.copy(TRACES / "sampled_rank-0.json.gz", run / "rank0.json.gz")
    script = (
        "import sys\n"
        "from tracesets.cli import main\n"
        f"sys.argv = ['tracesets', 'upload', {str(run)!r}, '--rank-count', '128', '--json']\n"
        "try:\n"
        "    main.main()\n"
        "finally:\n"
        "    print('pydantic imported:', 'pydantic' in sys.modules, file=sys.stderr)\n"
        "    print('rich console imported:', 'rich.console' in sys.modules, file=sys.stderr)\n"
        "    print('httpcore imported:', 'httpcore' in sys.modules, file=sys.stderr)\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in TERMINAL_VARIABLES}
    env |= {"TRACESETS_URL": server.url, "TRACESETS_TOKEN": workspace_token}
    done = subprocess.run(
        [sys.executable, "-c", script],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "pydantic imported: False" in done.stderr
    assert "rich console imported: False" in done.stderr  # stderr is no terminal here
    assert "httpcore imported: False" in done.stderr  # every request on http.client
    printed = jsontext.loads(done.stdout)
    assert printed["status"] == "ready" and printed["fileCount"] == 1
    assert printed["createdAt"].endswith("Z")
