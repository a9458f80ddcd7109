"""A traceset deleted while a process records its inspection: both end well.

The interleaving that deadlocked on PostgreSQL: the recorder holds the inspection's row
and has updated it once; a delete holds the traceset's row and waits for the
inspection's (its cascade); the recorder updates the inspection's row again, which
checks the row's foreign key, so it waits for the traceset's row: each waits for the
other, and PostgreSQL ends one of them (the delete answered 500). Here the delete is
started once the recorder has updated the inspection, and the recorder goes on only
once PostgreSQL shows the delete waiting for a lock.

On the run's backend: PostgreSQL when the scaled pass runs (where row locks exist), else
SQLite, whose one writer makes the delete wait for the recorder's transaction whole.
"""

from __future__ import annotations

import os
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import orjson
import pytest

from tests.server import own_database
from tracesets.api.blobs import BLOB_ROUTE
from tracesets.db import inspection_files as claims
from tracesets.db import queries
from tracesets.db.engine import Database, sqlite_url
from tracesets.problems import NotFound
from tracesets.service.catalog import TracesetService
from tracesets.storage.local import LocalBlobStore
from tracesets.storage.signing import URLSigner

BASE = "http://127.0.0.1:1"
OWNER = "recorder-1"


@pytest.fixture
def service(tmp_path: Path) -> TracesetService:
    url = os.environ.get("TRACESETS_TEST_DATABASE_URL")
    db = Database(own_database(url) if url else sqlite_url(tmp_path))
    db.migrate()
    store = LocalBlobStore(tmp_path / "files", URLSigner(b"s" * 32), url_path=BLOB_ROUTE)
    return TracesetService(db, store)


def running_inspection(service: TracesetService) -> tuple[str, int, claims.Claim]:
    """A ready traceset of one primary file, its inspection running and the file claimed."""
    body = {
        "name": "job",
        "files": [{"name": "rank0.json", "size": 1, "role": "primary", "sha256": "a" * 64}],
        "workloadMetadata": {"shape": {"rankCount": 1}},
    }
    traceset, _ = service.create_upload("ws", orjson.dumps(body), BASE)
    now = datetime.now(UTC)
    with service.db.write() as conn:
        seq = traceset.seq
        queries.set_status(conn, seq=seq, status="ready", now=now)
        queries.queue_inspection(conn, seq=seq)
        [claim] = claims.claim_files(
            conn,
            owner=OWNER,
            now=now,
            lease_until=now + timedelta(minutes=5),
            max_files=16,
            max_bytes=1 << 20,
        ).files
        assert claim.seq == seq
    return traceset.id, seq, claim


def wait_for_a_lock_wait(service: TracesetService, deleting: threading.Thread) -> None:
    """Until the delete waits for a row lock (PostgreSQL); SQLite's waits in-process."""
    if service.db.is_sqlite:
        return
    import psycopg

    url = service.db.url.replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(url, autocommit=True) as watcher:
        while deleting.is_alive():
            row = watcher.execute(
                "SELECT count(*) FROM pg_stat_activity "
                "WHERE datname = current_database() AND wait_event_type = 'Lock'"
            ).fetchone()
            if row is not None and row[0] > 0:
                return
    raise AssertionError("the delete ended without waiting for the recorder")


def test_a_delete_during_the_recording_of_an_inspection_waits_for_it(
    service: TracesetService,
) -> None:
    traceset_id, seq, claim = running_inspection(service)
    failures: list[BaseException] = []

    def delete() -> None:
        try:
            service.delete("ws", traceset_id)
        except BaseException as exc:  # reported by the test, not lost in the thread
            failures.append(exc)

    deleting = threading.Thread(target=delete)
    with service.db.write() as conn:  # the recorder's transaction, as _record runs it
        assert claims.lock_inspection(conn, seq) == "running"
        now = datetime.now(UTC)
        assert claims.record_file(
            conn, claim=claim, owner=OWNER, status="done", result="{}", now=now
        )
        assert claims.unfinished(conn, seq) == 0
        queries.finish_inspection(conn, seq=seq, status="done", ok=True, result=b"{}", now=now)
        deleting.start()
        wait_for_a_lock_wait(service, deleting)
        claims.checked(conn, seq=seq, owner=OWNER)  # the inspection's row, updated again
    deleting.join()
    assert failures == []
    with pytest.raises(NotFound):
        service.get("ws", traceset_id)
