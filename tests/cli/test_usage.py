"""``tracesets usage``: the workspace's tracesets, files, bytes and quota, as a table or JSON."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.test_cli import Run, ok


def test_usage_prints_a_table_and_json(tracesets: Run, tmp_path: Path) -> None:
    (tmp_path / "train.log").write_bytes(b"x" * 1500)
    ok(tracesets("upload", tmp_path / "train.log", "--rank-count", "1"))
    table = ok(tracesets("usage")).stdout.splitlines()
    assert [line.split() for line in table] == [
        ["tracesets", "pending", "0"],
        ["tracesets", "ready", "1"],
        ["tracesets", "promoted", "0"],
        ["files", "1"],
        ["stored", "1.5", "kB", "(1,500", "bytes)"],
        ["pending", "0", "bytes"],
        ["quota", "none"],
    ]
    assert json.loads(ok(tracesets("usage", "--json")).stdout) == {
        "tracesets": {"pending": 0, "ready": 1, "promoted": 0},
        "files": 1,
        "bytesStored": 1500,
        "bytesPending": 0,
        "quotaBytes": None,
    }
