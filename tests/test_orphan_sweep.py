"""The sweep of stored objects without rows, on S3 (moto in process, so it runs on the
embedded suite too): objects of tracesets without a row go once older than the grace,
a page at a time; objects whose traceset has a row, pending or ready, always stay."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import boto3
import pytest
from moto import mock_aws

from tracesets.db.engine import Database, sqlite_url
from tracesets.db.tables import tracesets
from tracesets.service import orphans
from tracesets.service.orphans import OrphanSweep
from tracesets.storage.s3 import S3BlobStore

BUCKET = "tracesets-orphans"


@pytest.fixture
def store(monkeypatch: pytest.MonkeyPatch) -> Iterator[S3BlobStore]:
    for name in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    with mock_aws():
        client = boto3.client("s3", region_name="us-east-1")
        client.create_bucket(Bucket=BUCKET)
        client.put_object(Bucket=BUCKET, Key="elsewhere/x", Body=b"not ours")
        yield S3BlobStore(
            f"s3://{BUCKET}/ts",
            upload_ttl=60,
            download_ttl=60,
            multipart_threshold=5 * 1024 * 1024 + 1,
            part_size=5 * 1024 * 1024,
            client=client,
        )


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    database = Database(sqlite_url(tmp_path))
    database.migrate()
    now = datetime.now(UTC)
    with database.write() as conn:
        for traceset_id, status in (("ready1", "ready"), ("pend1", "pending")):
            conn.execute(
                tracesets.insert().values(
                    id=traceset_id,
                    workspace="w",
                    name=traceset_id,
                    status=status,
                    created_at=now,
                    updated_at=now,
                )
            )
    yield database
    database.dispose()


def keys(store: S3BlobStore) -> list[str]:
    listed = store.s3.list_objects_v2(Bucket=BUCKET).get("Contents", [])
    return sorted(o["Key"] for o in listed)


def put(store: S3BlobStore, *names: str) -> None:
    for name in names:
        store.s3.put_object(Bucket=BUCKET, Key=f"ts/{name}", Body=name.encode())


def test_objects_without_rows_go_and_those_with_rows_stay(store: S3BlobStore, db: Database) -> None:
    put(store, "gone1/0", "gone1/1", "pend1/0", "ready1/0", "ready1/1", "zgone/0")
    assert OrphanSweep(db, store).run(grace=timedelta(0)) == 3
    assert keys(store) == ["elsewhere/x", "ts/pend1/0", "ts/ready1/0", "ts/ready1/1"]


def test_objects_younger_than_the_grace_stay(store: S3BlobStore, db: Database) -> None:
    put(store, "gone1/0", "ready1/0")
    assert OrphanSweep(db, store).run() == 0
    assert keys(store) == ["elsewhere/x", "ts/gone1/0", "ts/ready1/0"]


def test_each_pass_lists_a_bounded_number_of_pages_and_the_next_goes_on(
    store: S3BlobStore, db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(orphans, "PAGE", 2)
    put(store, "a/0", "b/0", "ready1/0", "x/0", "y/0")
    sweep = OrphanSweep(db, store)
    assert sweep.run(pages=1, grace=timedelta(0)) == 2  # a/0, b/0
    assert keys(store) == ["elsewhere/x", "ts/ready1/0", "ts/x/0", "ts/y/0"]
    assert sweep.run(pages=1, grace=timedelta(0)) == 1  # ready1/0 stays, x/0
    assert sweep.run(pages=1, grace=timedelta(0)) == 1  # y/0: the last page
    assert keys(store) == ["elsewhere/x", "ts/ready1/0"]
