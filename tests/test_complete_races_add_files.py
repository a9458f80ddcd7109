"""``complete`` checks the files it read, outside any transaction: a file added meanwhile
must not end up in a ready traceset without its bytes."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest

from tracesets.api.blobs import BLOB_ROUTE
from tracesets.db.engine import Database, sqlite_url
from tracesets.problems import Conflict
from tracesets.records import Checked
from tracesets.service.catalog import TracesetService
from tracesets.storage.local import LocalBlobStore
from tracesets.storage.signing import URLSigner

BASE = "http://127.0.0.1:1"


class ArrivedStore(LocalBlobStore):
    """Every file has arrived; the first check lets ``during_check`` run in the middle."""

    during_check: list[Callable[[], object]]

    def finish_upload(
        self, key: str, *, size: int, sha256: str | None, upload_id: str | None
    ) -> Checked:
        while self.during_check:
            self.during_check.pop()()
        digest = sha256 or hashlib.sha256(b"").hexdigest()
        return Checked(digest, "sha256", digest)


def body(*names: str) -> bytes:
    files = [{"name": n, "size": 1, "role": "primary", "sha256": "a" * 64} for n in names]
    return orjson.dumps({"files": files})


@pytest.fixture
def service(tmp_path: Path) -> TracesetService:
    db = Database(sqlite_url(tmp_path))
    db.migrate()
    store = ArrivedStore(tmp_path / "files", URLSigner(b"s" * 32), url_path=BLOB_ROUTE)
    store.during_check = []
    return TracesetService(db, store)


def test_a_file_added_while_complete_checks_the_others_keeps_the_traceset_pending(
    service: TracesetService,
) -> None:
    create = orjson.dumps(
        {
            "name": "job",
            "files": orjson.loads(body("rank0.json"))["files"],
            "workloadMetadata": {"shape": {"rankCount": 2}},
        }
    )
    traceset, _ = service.create_upload("ws", create, BASE)
    store = service.store
    assert isinstance(store, ArrivedStore)
    store.during_check.append(
        lambda: service.add_files("ws", traceset.id, body("rank1.json"), BASE)
    )
    with pytest.raises(Conflict) as refused:
        service.complete("ws", traceset.id)
    assert [p.value for p in refused.value.problems] == ["rank1.json"]
    assert service.get("ws", traceset.id).status == "pending"
    assert service.complete("ws", traceset.id).status == "ready"  # both checked this time
    assert [f.name for f in service.get("ws", traceset.id).files] == ["rank0.json", "rank1.json"]
