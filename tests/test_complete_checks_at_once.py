"""``complete`` checks a remote store's files side by side (``checks_at_once``), and still
names every file not whole, in the files' order, and still fails on a store's failure."""

from __future__ import annotations

import hashlib
import threading
from pathlib import Path

import orjson
import pytest

from tracesets.api.blobs import BLOB_ROUTE
from tracesets.db.engine import Database, sqlite_url
from tracesets.problems import Conflict
from tracesets.records import Checked
from tracesets.service.catalog import TracesetService
from tracesets.storage.base import UploadIncomplete
from tracesets.storage.local import LocalBlobStore
from tracesets.storage.signing import URLSigner

BASE = "http://127.0.0.1:1"
AT_ONCE = 4
FILES = 12


class RemoteLikeStore(LocalBlobStore):
    """A store whose checks answer only once ``AT_ONCE`` of them are in flight together:
    checked one at a time, the first would wait for the barrier's timeout and fail."""

    checks_at_once = AT_ONCE

    def __init__(self, root: Path) -> None:
        super().__init__(root, URLSigner(b"s" * 32), url_path=BLOB_ROUTE)
        self.together = threading.Barrier(AT_ONCE, timeout=30)
        self.not_whole: set[str] = set()
        self.broken: set[str] = set()
        self.threads: set[str] = set()
        self.lock = threading.Lock()

    def finish_upload(
        self, key: str, *, size: int, sha256: str | None, upload_id: str | None
    ) -> Checked:
        with self.lock:
            self.threads.add(threading.current_thread().name)
        if not self.broken:  # the failing case must not wait for partners that never come
            self.together.wait()
        if key in self.broken:
            raise OSError("the store is unreachable")
        if key in self.not_whole:
            raise UploadIncomplete("has not been received")
        digest = sha256 or hashlib.sha256(b"").hexdigest()
        return Checked(digest, "sha256", digest)


@pytest.fixture
def service(tmp_path: Path) -> TracesetService:
    db = Database(sqlite_url(tmp_path))
    db.migrate()
    return TracesetService(db, RemoteLikeStore(tmp_path / "files"))


def upload(service: TracesetService) -> str:
    files = [
        {"name": f"rank{i}.json", "size": 1, "role": "primary", "sha256": f"{i:064x}"}
        for i in range(FILES)
    ]
    body = {"name": "job", "files": files, "workloadMetadata": {"shape": {"rankCount": FILES}}}
    traceset, _ = service.create_upload("ws", orjson.dumps(body), BASE)
    return traceset.id


def store_of(service: TracesetService) -> RemoteLikeStore:
    assert isinstance(service.store, RemoteLikeStore)
    return service.store


def test_files_are_checked_side_by_side_and_each_gets_its_own_digest(
    service: TracesetService,
) -> None:
    traceset_id = upload(service)
    done = service.complete("ws", traceset_id)
    assert done.status == "ready"
    assert [f.sha256 for f in service.get("ws", traceset_id).files] == [
        f"{i:064x}" for i in range(FILES)
    ]
    assert len(store_of(service).threads) == AT_ONCE


def test_every_file_not_whole_is_named_in_the_files_order(service: TracesetService) -> None:
    traceset_id = upload(service)
    store_of(service).not_whole = {f"{traceset_id}/{i}" for i in (9, 2, 5)}
    with pytest.raises(Conflict) as refused:
        service.complete("ws", traceset_id)
    assert [p.value for p in refused.value.problems] == ["rank2.json", "rank5.json", "rank9.json"]
    assert service.get("ws", traceset_id).status == "pending"


def test_a_store_failing_fails_complete_and_leaves_the_upload_pending(
    service: TracesetService,
) -> None:
    traceset_id = upload(service)
    store_of(service).broken = {f"{traceset_id}/7"}
    with pytest.raises(OSError, match="unreachable"):
        service.complete("ws", traceset_id)
    assert service.get("ws", traceset_id).status == "pending"
