"""Usage is summed by the database through indexes: the workspace's tracesets by their
index, each one's files by their primary key, never a scan of every file."""

from __future__ import annotations

from pathlib import Path

import orjson

from tests.arrived import arrived_service
from tests.plans import plan_of, sent
from tracesets.db.usage import FileTotals


def test_usage_is_two_statements_through_indexes(tmp_path: Path) -> None:
    service = arrived_service(tmp_path)
    for workspace, count in (("ws", 3), ("other", 5)):
        files = [{"name": f"f{i}.log", "size": 10 + i, "role": "supporting"} for i in range(count)]
        body = orjson.dumps({"name": "n", "files": files})
        service.create_upload(workspace, body, "http://127.0.0.1:1")
    with sent(service.db) as selects:
        found = service.usage("ws")
    assert found.tracesets == {"pending": 1, "ready": 0, "promoted": 0}
    assert found.files == FileTotals(files=3, bytes_stored=0, bytes_pending=33)
    statements = [s for s, _ in selects if s.lstrip().upper().startswith("SELECT")]
    assert len(statements) == 2
    for statement, params in selects:
        if not statement.lstrip().upper().startswith("SELECT"):
            continue
        plan = plan_of(service.db, statement, params)
        assert "SCAN" not in plan, plan
        assert "SEARCH tracesets USING COVERING INDEX ix_tracesets_workspace_" in plan, plan
        assert "(workspace=?)" in plan, plan
        if "files" in statement:
            assert "SEARCH files USING INDEX sqlite_autoindex_files_1 (traceset_seq=?)" in plan
