"""The command prints what the service stores, every digit, and every file past a page."""

from __future__ import annotations

import hashlib
from pathlib import Path

from tests.cli.test_cli import Run, ok
from tests.client.test_exact_and_paged import HUGE, METADATA, TINY, create
from tests.server import ServerProcess
from tracesets import Client, jsontext
from tracesets.jsontext import JsonNumber


def test_list_and_show_print_stored_numbers_exactly(
    tracesets: Run, server: ServerProcess, workspace_token: str
) -> None:
    made = create(server, workspace_token, METADATA, ["rank0.json"])
    table = ok(tracesets("list"))
    assert made in table.stdout and "1 byte" in table.stdout
    listed = jsontext.loads(ok(tracesets("list", "--json")).stdout)
    assert listed[0]["workloadMetadata"]["huge"] == JsonNumber(HUGE)
    assert listed[0]["fileCount"] == 1 and "files" not in listed[0]
    shown = ok(tracesets("show", made))
    assert HUGE in shown.stdout and TINY in shown.stdout
    as_json = ok(tracesets("show", made, "--json")).stdout
    assert f'"lr": {TINY}' in as_json and f'"huge": {HUGE}' in as_json
    got = jsontext.loads(as_json)
    assert got["workloadMetadata"]["lr"] == JsonNumber(TINY)
    assert got["id"] == made and got["createdAt"].endswith("Z")


def test_show_and_download_go_past_the_first_page_of_files(
    tracesets: Run, server: ServerProcess, workspace_token: str, tmp_path: Path
) -> None:
    run = tmp_path / "run"
    run.mkdir()
    for i in range(1_003):
        (run / f"rank-{i:04d}.json").write_bytes(str(i).encode())
    with Client(server.url, workspace_token) as client:
        made = client.upload(run, name="many", workload_metadata={"shape": {"rankCount": 8}})
    assert made.fileCount == 1_003
    assert len(made.files) == 1_003 and made.filesNextCursor is None  # complete's, made whole
    shown = ok(tracesets("show", made.id)).stdout
    assert "rank-0000.json" in shown and "rank-1002.json" in shown
    dest = tmp_path / "copy"
    # A file past the first page is found (and checked against its sha256) by name.
    ok(tracesets("download", made.id, "rank-0000.json", "rank-1002.json", "--dest", str(dest)))
    assert sorted(p.name for p in dest.iterdir()) == ["rank-0000.json", "rank-1002.json"]
    last = (dest / "rank-1002.json").read_bytes()
    assert hashlib.sha256(last).hexdigest() == hashlib.sha256(b"1002").hexdigest()
