"""``complete``'s check of a file sent to S3 in one PUT: one GET, whose body is read only
when S3 kept no checksum of the object, and every way the object can be wrong still
refused and removed: only the object checked (a delete on its ETag), never bytes that
replaced it since. moto in process, so it runs on the embedded suite too."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from tracesets.storage.base import UploadIncomplete
from tracesets.storage.s3 import S3BlobStore
from tracesets.storage.s3_multipart import PARTS_SUFFIX

BUCKET = "tracesets-finish"
DATA = b"rank 0's trace, sent whole\n" * 40
SHA256 = hashlib.sha256(DATA).hexdigest()


@pytest.fixture
def store(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[S3BlobStore, list[str]]]:
    """The store, and the S3 operations it has called, in order."""
    for name in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    with mock_aws():
        client = boto3.client("s3", region_name="us-east-1")
        client.create_bucket(Bucket=BUCKET)
        called: list[str] = []

        def record(model: Any, **_: Any) -> None:
            called.append(model.name)

        client.meta.events.register("before-call.s3", record)
        yield (
            S3BlobStore(
                f"s3://{BUCKET}/ts",
                upload_ttl=60,
                download_ttl=60,
                multipart_threshold=5 * 1024 * 1024 + 1,
                part_size=5 * 1024 * 1024,
                client=client,
            ),
            called,
        )


def put(store: S3BlobStore, data: bytes, **extra: Any) -> None:
    store.s3.put_object(Bucket=BUCKET, Key="ts/t1/0", Body=data, **extra)


def stored_keys(store: S3BlobStore) -> list[str]:
    listed = store.s3.list_objects_v2(Bucket=BUCKET).get("Contents", [])
    return [o["Key"] for o in listed]


def test_an_object_without_checksum_is_read_back_in_its_one_get(
    store: tuple[S3BlobStore, list[str]],
) -> None:
    s3, called = store
    put(s3, DATA)
    called.clear()
    checked = s3.finish_upload("t1/0", size=len(DATA), sha256=SHA256, upload_id=None)
    assert (checked.sha256, checked.by, checked.checksum) == (SHA256, "sha256", SHA256)
    assert called == ["GetObject"]


def test_an_undeclared_digest_is_the_bytes_read(store: tuple[S3BlobStore, list[str]]) -> None:
    s3, called = store
    put(s3, DATA)
    called.clear()
    checked = s3.finish_upload("t1/0", size=len(DATA), sha256=None, upload_id=None)
    assert checked.sha256 == SHA256
    assert called == ["GetObject"]


def test_a_checksum_s3_kept_stands_for_the_bytes(store: tuple[S3BlobStore, list[str]]) -> None:
    s3, called = store
    put(s3, DATA, ChecksumAlgorithm="SHA256")
    called.clear()
    checked = s3.finish_upload("t1/0", size=len(DATA), sha256=SHA256, upload_id=None)
    assert (checked.sha256, checked.by) == (SHA256, "s3-sha256")
    assert called == ["GetObject"]


def test_other_bytes_are_refused_and_removed(store: tuple[S3BlobStore, list[str]]) -> None:
    s3, _ = store
    other = bytes(reversed(DATA))
    put(s3, other)
    with pytest.raises(
        UploadIncomplete, match=f"arrived with sha256 {hashlib.sha256(other).hexdigest()}"
    ):
        s3.finish_upload("t1/0", size=len(DATA), sha256=SHA256, upload_id=None)
    assert stored_keys(s3) == []


def test_another_size_is_refused_unread_and_removed(store: tuple[S3BlobStore, list[str]]) -> None:
    s3, called = store
    put(s3, DATA + b"!")
    called.clear()
    with pytest.raises(UploadIncomplete, match=f"arrived with {len(DATA) + 1:,} bytes"):
        s3.finish_upload("t1/0", size=len(DATA), sha256=SHA256, upload_id=None)
    assert called == ["GetObject", "DeleteObject"]
    assert stored_keys(s3) == []


def test_a_missing_object_has_not_been_received(store: tuple[S3BlobStore, list[str]]) -> None:
    s3, _ = store
    with pytest.raises(UploadIncomplete, match="has not been received"):
        s3.finish_upload("t1/0", size=len(DATA), sha256=SHA256, upload_id=None)


def swap_in_before(s3: S3BlobStore, operation: str, data: bytes) -> Any:
    """Before the store's first ``operation`` on the file's object (a delete: DeleteObject
    or DeleteObjects): the object is removed and ``data`` sent in its place (another
    ``complete`` removed it, then the client sent the right bytes). Returns a client of
    its own, to look at the bucket."""
    other = boto3.client("s3", region_name="us-east-1")
    names = {"DeleteObject", "DeleteObjects"} if operation == "delete" else {operation}

    def right_bytes_race_in(model: Any, params: dict[str, Any], **_: Any) -> None:
        if model.name in names and not params["url_path"].endswith(PARTS_SUFFIX):
            s3.s3.meta.events.unregister("before-call.s3", right_bytes_race_in)
            other.delete_object(Bucket=BUCKET, Key="ts/t1/0")
            other.put_object(Bucket=BUCKET, Key="ts/t1/0", Body=data, IfNoneMatch="*")

    s3.s3.meta.events.register("before-call.s3", right_bytes_race_in)
    return other


@pytest.mark.parametrize(
    "wrong", [bytes(reversed(DATA)), DATA + b"!"], ids=["other bytes", "another size"]
)
def test_bytes_that_arrived_after_the_check_are_never_removed(
    store: tuple[S3BlobStore, list[str]], wrong: bytes
) -> None:
    s3, _ = store
    put(s3, wrong)
    other = swap_in_before(s3, "delete", DATA)
    with pytest.raises(UploadIncomplete) as refused:
        s3.finish_upload("t1/0", size=len(DATA), sha256=SHA256, upload_id=None)
    assert stored_keys(s3) == ["ts/t1/0"]
    assert other.get_object(Bucket=BUCKET, Key="ts/t1/0")["Body"].read() == DATA
    assert "; other bytes have arrived since" in str(refused.value)
    checked = s3.finish_upload("t1/0", size=len(DATA), sha256=SHA256, upload_id=None)
    assert checked.sha256 == SHA256


LARGE = DATA * (6 * 1024 * 1024 // len(DATA))
LARGE_SHA256 = hashlib.sha256(LARGE).hexdigest()


def joined_from_parts(s3: S3BlobStore, data: bytes) -> str:
    """``data`` sent in parts declared without their digests (read back at ``complete``),
    for a file of ``LARGE``'s size and sha256; the upload's id."""
    plan = s3.plan_upload("t1/0", size=len(LARGE), sha256=LARGE_SHA256, base_url="http://unused")
    assert plan.upload_id is not None and plan.part_size is not None and plan.parts
    for part in plan.parts:
        start = (part.part_number - 1) * plan.part_size
        s3.s3.upload_part(
            Bucket=BUCKET,
            Key="ts/t1/0",
            UploadId=plan.upload_id,
            PartNumber=part.part_number,
            Body=data[start : start + part.size],
        )
    return plan.upload_id


@pytest.mark.parametrize("raced", [False, True], ids=["alone", "right bytes raced in"])
def test_parts_of_other_bytes_are_removed_only_while_there(
    store: tuple[S3BlobStore, list[str]], raced: bool
) -> None:
    """The joined object of other bytes goes, unless the right bytes replaced it after
    the check."""
    s3, _ = store
    wrong = bytes(reversed(LARGE))
    upload_id = joined_from_parts(s3, wrong)
    if raced:
        swap_in_before(s3, "delete", LARGE)
    found = f"arrived with sha256 {hashlib.sha256(wrong).hexdigest()}"
    with pytest.raises(UploadIncomplete, match=found):
        s3.finish_upload("t1/0", size=len(LARGE), sha256=LARGE_SHA256, upload_id=upload_id)
    if raced:
        checked = s3.finish_upload("t1/0", size=len(LARGE), sha256=LARGE_SHA256, upload_id=None)
        assert checked.sha256 == LARGE_SHA256
    else:
        assert stored_keys(s3) == []


def test_an_object_replaced_between_its_size_and_its_bytes_is_checked_again(
    store: tuple[S3BlobStore, list[str]],
) -> None:
    """The bytes read back are those of the object whose size was checked (a GET on its
    ETag): bytes that replaced it in between are left for the next check."""
    s3, _ = store
    upload_id = joined_from_parts(s3, bytes(reversed(LARGE)))
    other = swap_in_before(s3, "GetObject", LARGE)
    with pytest.raises(UploadIncomplete, match="was replaced while it was checked"):
        s3.finish_upload("t1/0", size=len(LARGE), sha256=LARGE_SHA256, upload_id=upload_id)
    assert other.get_object(Bucket=BUCKET, Key="ts/t1/0")["Body"].read() == LARGE
    checked = s3.finish_upload("t1/0", size=len(LARGE), sha256=LARGE_SHA256, upload_id=None)
    assert checked.sha256 == LARGE_SHA256
