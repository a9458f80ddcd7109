"""The inspection queue takes workspaces in turn: one workspace's flood of tracesets does
not hold back another's inspection, and several processes claiming at once still never
claim a file twice.

Claims are driven in-process through the statements the queue runs, on the run's
database: PostgreSQL when the scaled pass runs (a database of its own, so that no
service's queue claims these files), else SQLite.
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
from tracesets.service.catalog import TracesetService
from tracesets.storage.local import LocalBlobStore
from tracesets.storage.signing import URLSigner

BASE = "http://127.0.0.1:1"
NOW = datetime(2026, 12, 4, tzinfo=UTC)
LEASE = timedelta(minutes=5)
FILES = 4  # each traceset's primary files


@pytest.fixture
def service(tmp_path: Path) -> TracesetService:
    url = os.environ.get("TRACESETS_TEST_DATABASE_URL")
    db = Database(own_database(url) if url else sqlite_url(tmp_path))
    db.migrate()
    store = LocalBlobStore(tmp_path / "files", URLSigner(b"s" * 32), url_path=BLOB_ROUTE)
    return TracesetService(db, store)


def queued(service: TracesetService, workspace: str, name: str) -> str:
    """A ready traceset of FILES primary files, its inspection queued, as ``complete``
    leaves it; its id."""
    body = {
        "name": name,
        "files": [
            {"name": f"rank{n}.json", "size": 1, "role": "primary", "sha256": "a" * 64}
            for n in range(FILES)
        ],
        "workloadMetadata": {"shape": {"rankCount": FILES}},
    }
    traceset, _ = service.create_upload(workspace, orjson.dumps(body), BASE)
    with service.db.write() as conn:
        queries.set_status(conn, seq=traceset.seq, status="ready", now=NOW)
        queries.queue_inspection(conn, seq=traceset.seq)
    return traceset.id


def claim(
    service: TracesetService, owner: str, *, now: datetime = NOW, max_files: int = FILES
) -> list[claims.Claim]:
    with service.db.write() as conn:
        return claims.claim_files(
            conn,
            owner=owner,
            now=now,
            lease_until=now + LEASE,
            max_files=max_files,
            max_bytes=1 << 20,
        ).files


def test_a_workspace_queued_behind_a_flood_is_served_at_its_next_turn(
    service: TracesetService,
) -> None:
    flood = [queued(service, "alpha", f"alpha-{n}") for n in range(20)]
    first = claim(service, "w1")
    second = claim(service, "w1")
    late = queued(service, "beta", "beta-0")
    after = [claim(service, "w1") for _ in range(3)]
    # Alpha's, oldest first; beta's whole traceset at the first claim after it came;
    # then alpha again, where it left off.
    assert [c.traceset_id for c in first + second] == [flood[0]] * FILES + [flood[1]] * FILES
    assert [c.traceset_id for c in after[0]] == [late] * FILES
    assert [c.traceset_id for c in after[1] + after[2]] == [flood[2]] * FILES + [flood[3]] * FILES


def test_workspaces_alternate_file_batch_by_file_batch_within_one_large_traceset(
    service: TracesetService,
) -> None:
    big = queued(service, "alpha", "alpha-big")
    first = claim(service, "w1", max_files=1)
    late = queued(service, "beta", "beta-0")
    order = [c.traceset_id for _ in range(4) for c in claim(service, "w1", max_files=1)]
    assert [c.traceset_id for c in first] == [big]
    assert order == [late, big, late, big]


def test_files_whose_lease_ran_out_are_taken_over_before_anyone_s_turn(
    service: TracesetService,
) -> None:
    held = queued(service, "alpha", "alpha-0")
    lost = claim(service, "dead")
    queued(service, "beta", "beta-0")
    later = NOW + 2 * LEASE
    taken_over = claim(service, "w2", now=later)
    assert [(c.traceset_id, c.idx, c.attempts) for c in taken_over] == [
        (held, c.idx, 2) for c in lost
    ]


def test_processes_claiming_at_once_claim_every_file_exactly_once(
    service: TracesetService,
) -> None:
    expected = {
        (traceset_id, idx)
        for workspace in ("alpha", "beta", "gamma")
        for n in range(4)
        for traceset_id in [queued(service, workspace, f"{workspace}-{n}")]
        for idx in range(FILES)
    }
    got: dict[str, list[tuple[str, int]]] = {}
    failures: list[BaseException] = []
    start = threading.Barrier(4)

    def worker(owner: str) -> None:
        try:
            start.wait()
            mine = got.setdefault(owner, [])
            while batch := claim(service, owner, max_files=3):
                mine += [(c.traceset_id, c.idx) for c in batch]
        except BaseException as exc:  # reported by the test, not lost in the thread
            failures.append(exc)

    threads = [threading.Thread(target=worker, args=(f"w{n}",)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    every = [file for files in got.values() for file in files]
    assert len(every) == len(set(every))
    assert set(every) == expected
