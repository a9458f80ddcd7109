"""``tracesets download``: many files at once, a second run that resumes, a mismatch refused.

The subprocess runs see the command as a user does; the mismatch runs it in this process
with the client's transport corrupting the bytes from storage.
"""

from __future__ import annotations

import hashlib
import re
import sys
from pathlib import Path

import pytest

from tests.cli.test_cli import Run, ok
from tests.client.test_download import Corrupting, same_tree, uploaded
from tests.server import ServerProcess
from tracesets import Client
from tracesets.cli import options
from tracesets.cli.main import main

SIZE = r"[\d.]+ (?:[kMG]?B|bytes?)"
SUMMARY = re.compile(
    rf"(?P<files>\d+) files? in .+: (?P<got>\d+) downloaded \({SIZE} in [\d.]+ s"
    rf"(?:, {SIZE}/s)?\), (?P<there>\d+) already there\n"
)


def counts(stdout: str) -> tuple[int, int, int]:
    found = SUMMARY.fullmatch(stdout)
    assert found is not None, stdout
    return int(found["files"]), int(found["got"]), int(found["there"])


def test_many_files_then_a_resume_that_skips_and_repairs(
    tracesets: Run, server: ServerProcess, workspace_token: str, tmp_path: Path
) -> None:
    sizes = {f"ranks/rank-{r:04d}.json": 500 + r for r in range(150)}
    traceset = uploaded(server, workspace_token, tmp_path / "up", sizes)
    dest = tmp_path / "down"
    first = ok(tracesets("download", traceset.id, "--dest", dest, "--concurrency", "16"))
    assert counts(first.stdout) == (150, 150, 0)
    assert "rank-0000" not in first.stdout + first.stderr  # a summary, not a line a file
    assert same_tree(tmp_path / "up", dest)

    (dest / "ranks" / "rank-0007.json").write_bytes(b"\0" * sizes["ranks/rank-0007.json"])
    (dest / "ranks" / "rank-0100.json").unlink()
    (dest / "ranks" / "rank-0120.json").write_bytes(b"half")
    second = ok(tracesets("download", traceset.id, "--dest", dest))
    assert counts(second.stdout) == (150, 3, 147)
    assert same_tree(tmp_path / "up", dest)
    assert counts(ok(tracesets("download", traceset.id, "--dest", dest)).stdout) == (150, 0, 150)


def test_a_mismatch_exits_1_naming_the_file(
    server: ServerProcess,
    workspace_token: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    traceset = uploaded(server, workspace_token, tmp_path / "up", {"a.json": 900, "b.json": 9})
    expected = hashlib.sha256((tmp_path / "up" / "b.json").read_bytes()).hexdigest()
    monkeypatch.setattr(
        options,
        "client",
        lambda url, token, concurrency=8: Client(
            server.url, workspace_token, concurrency=concurrency, transport=Corrupting()
        ),
    )
    dest = tmp_path / "down"
    monkeypatch.setattr(
        sys, "argv", ["tracesets", "download", traceset.id, "b.json", "-d", str(dest)]
    )
    with pytest.raises(SystemExit) as exited:
        main()
    assert exited.value.code == 1
    said = capsys.readouterr().err
    assert "b.json: the bytes received have sha256" in said and expected in said
    assert [p for p in dest.rglob("*") if p.is_file()] == []
