"""Files in an S3-compatible bucket; clients send and fetch bytes with presigned URLs.

The service stays out of the data path for uploads and downloads. Files above the
multipart threshold (and always above S3's 5 GiB single-PUT limit) get a multipart
upload with one presigned URL per part; the part size grows with the file so that no
file needs more than 1,000 parts. Each URL signs the exact byte count, and a single
PUT of a file with a declared sha256 signs its checksum too, so S3 itself refuses
wrong bytes. Every single PUT also signs ``If-None-Match: *`` (a conditional write):
S3 stores the object only if the key holds none, so once a file's bytes are in, no
URL the service handed out (valid for hours) can replace them, before or after
``complete``; a multipart upload is joined with the same condition, and its part URLs
die with the upload. What ``complete`` checked is what stays.

A client that declares its parts' SHA-256 (and the file's) gets a multipart upload with
S3's SHA-256 checksums: each part URL signs its part's digest, so S3 refuses other bytes,
and S3 keeps the composite checksum of the joined object (the SHA-256 of the parts'
digests). ``finish_upload`` checks every object before the traceset is ready: the size
always; the sha256 from S3's own checksum where it kept a whole-object one; for parts,
S3's composite against the declared parts' (no byte read); else by reading the object
back (undeclared parts, or S3-compatible stores that do not check checksums). An object
found wrong is removed, if it is still the one checked (a delete conditional on its
ETag), so that the right bytes can be sent: a store that checks no signed checksum keeps
wrong bytes, which ``If-None-Match: *`` would otherwise guard forever.
"""

from __future__ import annotations

import hashlib
import logging
import math
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Final
from urllib.parse import quote

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

from tracesets.records import Checked
from tracesets.storage.base import PartTarget, UploadIncomplete, UploadPlan
from tracesets.storage.s3_multipart import Multipart, expected_parts
from tracesets.storage.s3_objects import (
    MIB,
    S3Location,
    S3Source,
    b64_sha256,
    composite_sha256,
    error_code,
    is_missing,
    part_size_for,
    remove_if_unchanged,
    stored_sha256,
)
from tracesets.uploadrequest import PartDigests

log = logging.getLogger("tracesets.storage")

MIN_PART_SIZE: Final = 5 * MIB  # S3's minimum for every part but the last
MAX_SINGLE_PUT: Final = 5 * 1024**3  # S3 refuses a single PUT above 5 GiB
MAX_PRESIGN_SECONDS: Final = 7 * 24 * 3600  # SigV4's limit
_READ_CHUNK: Final = 8 * MIB
#: Files ``complete`` checks at once (a request each, more for parts), and the client's
#: connections, so that none of them waits for a connection.
CHECKS_AT_ONCE: Final = 16


class S3BlobStore:
    checks_at_once = CHECKS_AT_ONCE
    remote = True

    def __init__(
        self,
        url: str,
        *,
        upload_ttl: int,
        download_ttl: int,
        multipart_threshold: int,
        part_size: int,
        client: Any = None,
    ) -> None:
        self.location = S3Location.parse(url)
        self.upload_ttl = min(upload_ttl, MAX_PRESIGN_SECONDS)
        self.download_ttl = min(download_ttl, MAX_PRESIGN_SECONDS)
        self.multipart_threshold = min(multipart_threshold, MAX_SINGLE_PUT)
        self.part_size = max(part_size, MIN_PART_SIZE)
        # A custom endpoint (MinIO, moto, Ceph…) usually wants path-style addressing.
        path_style = bool(
            os.environ.get("AWS_ENDPOINT_URL") or os.environ.get("AWS_ENDPOINT_URL_S3")
        )
        self.s3 = client or boto3.client(
            "s3",
            config=Config(
                signature_version="s3v4",
                s3={"addressing_style": "path" if path_style else "auto"},
                retries={"max_attempts": 5, "mode": "standard"},
                max_pool_connections=2 * CHECKS_AT_ONCE,
            ),
        )
        self.parts = Multipart(self.s3, self.location.bucket)

    def check(self) -> None:
        """Fail at start, with the bucket's name, if it cannot be reached."""
        try:
            self.s3.head_bucket(Bucket=self.location.bucket)
        except ClientError as exc:
            raise RuntimeError(f"cannot reach bucket {self.location.bucket!r}: {exc}") from exc

    def _key(self, key: str) -> str:
        return f"{self.location.prefix}/{key}" if self.location.prefix else key

    def _expires(self, seconds: int) -> datetime:
        return datetime.now(UTC) + timedelta(seconds=seconds)

    def _presign(self, operation: str, seconds: int, **params: Any) -> str:
        url: str = self.s3.generate_presigned_url(
            operation, Params={"Bucket": self.location.bucket, **params}, ExpiresIn=seconds
        )
        return url

    # -- uploads -------------------------------------------------------------------------

    def plan_upload(
        self,
        key: str,
        *,
        size: int,
        sha256: str | None,
        base_url: str,
        parts: PartDigests | None = None,
    ) -> UploadPlan:
        if size > self.multipart_threshold:
            extra: dict[str, str] = {}
            if parts is not None and sha256 is not None:
                self.parts.save_digests(self._key(key), parts)
                extra["ChecksumAlgorithm"] = "SHA256"
            else:
                parts = None
            created = self.s3.create_multipart_upload(
                Bucket=self.location.bucket, Key=self._key(key), **extra
            )
            part_size = parts.part_size if parts else part_size_for(size, self.part_size)
            numbers = range(1, max(1, math.ceil(size / part_size)) + 1)
            return self._multipart_plan(key, size, created["UploadId"], part_size, numbers, parts)
        params: dict[str, Any] = {"Key": self._key(key), "ContentLength": size, "IfNoneMatch": "*"}
        headers: dict[str, str] = {"If-None-Match": "*"}
        if sha256 is not None:
            checksum = b64_sha256(sha256)
            params["ChecksumSHA256"] = checksum
            headers["x-amz-checksum-sha256"] = checksum
        return UploadPlan(
            expires_at=self._expires(self.upload_ttl),
            url=self._presign("put_object", self.upload_ttl, **params),
            headers=headers,
        )

    def _multipart_plan(
        self,
        key: str,
        size: int,
        upload_id: str,
        part_size: int,
        numbers: Iterator[int] | range | list[int],
        digests: PartDigests | None,
    ) -> UploadPlan:
        parts = []
        for number in numbers:
            length = min(part_size, size - (number - 1) * part_size)
            params: dict[str, Any] = {}
            headers: dict[str, str] = {}
            if digests is not None:
                # Signed with its value: S3 stores the part only if its bytes have it.
                params["ChecksumSHA256"] = b64_sha256(digests.sha256[number - 1])
                headers["x-amz-checksum-sha256"] = params["ChecksumSHA256"]
            url = self._presign(
                "upload_part",
                self.upload_ttl,
                Key=self._key(key),
                UploadId=upload_id,
                PartNumber=number,
                ContentLength=length,
                **params,
            )
            parts.append(PartTarget(part_number=number, url=url, size=length, headers=headers))
        return UploadPlan(
            expires_at=self._expires(self.upload_ttl),
            upload_id=upload_id,
            part_size=part_size,
            parts=parts,
        )

    def _object_size(self, key: str) -> int | None:
        try:
            head = self.s3.head_object(Bucket=self.location.bucket, Key=self._key(key))
        except ClientError as exc:
            if is_missing(exc):
                return None
            raise
        return int(head["ContentLength"])

    def resume_upload(
        self,
        key: str,
        *,
        size: int,
        sha256: str | None,
        upload_id: str | None,
        part_size: int | None,
        base_url: str,
    ) -> UploadPlan | None:
        if upload_id is None or part_size is None:
            if self._object_size(key) == size:
                return None
            return self._plan_again(key, size, sha256, base_url)
        stored = self.parts.sizes(self._key(key), upload_id)
        if stored is None:  # completed already, or aborted: start again unless whole
            if self._object_size(key) == size:
                return None
            return self._plan_again(key, size, sha256, base_url)
        wanted = expected_parts(size, part_size)
        missing = [n for n, length in wanted.items() if stored.get(n) != length]
        if not missing:
            return None  # every part is in; complete joins them
        digests = self.parts.load_digests(self._key(key))
        return self._multipart_plan(key, size, upload_id, part_size, missing, digests)

    def _plan_again(self, key: str, size: int, sha256: str | None, base_url: str) -> UploadPlan:
        """A new upload of ``key``, in parts signed with their declared digests if any."""
        parts = self.parts.load_digests(self._key(key)) if size > self.multipart_threshold else None
        return self.plan_upload(key, size=size, sha256=sha256, base_url=base_url, parts=parts)

    def arrived(
        self,
        key: str,
        *,
        size: int,
        sha256: str | None,
        upload_id: str | None,
        part_size: int | None,
    ) -> bool:
        if upload_id is not None and part_size is not None:
            stored = self.parts.sizes(self._key(key), upload_id)
            if stored is not None:
                return stored == expected_parts(size, part_size)
        return self._object_size(key) == size

    def checked_at_upload(self, prefix: str) -> Mapping[str, int]:
        """Objects of one PUT whose URL signed ``x-amz-checksum-sha256`` (``plan_upload``
        signs the declared digest for every file it does not send in parts) are in S3 only
        if their bytes have that digest, and only once (``If-None-Match``): the listing's
        ``ChecksumAlgorithm`` says which have one, 1,000 keys a request.

        An S3-compatible store that does not check checksums must not list one: moto
        lists the algorithm only when ``x-amz-sdk-checksum-algorithm`` came with the PUT,
        which these URLs do not sign, so there every file is read back at ``complete``."""
        found: dict[str, int] = {}
        start = len(self._key(""))
        for page in self.s3.get_paginator("list_objects_v2").paginate(
            Bucket=self.location.bucket, Prefix=self._key(prefix) + "/"
        ):
            for listed in page.get("Contents", []):
                if "SHA256" in listed.get("ChecksumAlgorithm", ()):
                    found[listed["Key"][start:]] = int(listed["Size"])
        return found

    def drop_superseded(self, prefix: str, kept: Mapping[str, str]) -> None:
        """Nothing to drop: each key holds one object, written once."""

    def finish_upload(
        self, key: str, *, size: int, sha256: str | None, upload_id: str | None
    ) -> Checked:
        if upload_id is None and size <= self.multipart_threshold:
            return self._finish_single(key, size, sha256)
        digests = None
        if upload_id is not None and sha256 is not None:
            digests = self.parts.load_digests(self._key(key))
        if upload_id is not None:
            self.parts.join(self._key(key), size, upload_id, digests)
        head = self._received(self.s3.head_object, key)
        etag = str(head["ETag"])
        self._check_size(key, int(head["ContentLength"]), size, etag)
        # Joined from parts by an earlier complete (a whole-object checksum is a single PUT's).
        if (
            digests is None
            and sha256 is not None
            and head.get("ChecksumSHA256")
            and head.get("ChecksumType") != "FULL_OBJECT"
        ):
            digests = self.parts.load_digests(self._key(key))
        checksum = str(head.get("ChecksumSHA256") or "")
        digest = self._parts_sha256(key, head, sha256, digests)
        how = f"S3's composite checksum of {len(digests.sha256) if digests else 0} declared parts"
        checked = None if digest is None else Checked(digest, "s3-composite-sha256", checksum)
        if checked is None and (digest := stored_sha256(head)) is not None:
            checked, how = Checked(digest, "s3-sha256", checksum), "S3's whole-object SHA-256"
        if checked is None:
            digest = self._read_sha256(key, etag)
            checked, how = Checked(digest, "sha256", digest), f"reading its {size:,} bytes back"
        return self._as_declared(key, checked, sha256, how, etag)

    def _finish_single(self, key: str, size: int, sha256: str | None) -> Checked:
        """A file of one PUT, in one request: a GET answers its size and any checksum S3
        kept, and its body (a few MiB at most) is read only when S3 kept none. The GET
        stands for a HEAD and then a read back, which a store that keeps no checksum of a
        presigned PUT (moto) would otherwise answer for every file of a traceset."""
        got = self._received(self.s3.get_object, key)
        body, etag = got["Body"], str(got["ETag"])
        try:
            self._check_size(key, int(got["ContentLength"]), size, etag)
            checksum = str(got.get("ChecksumSHA256") or "")
            if (digest := stored_sha256(got)) is not None:
                checked = Checked(digest, "s3-sha256", checksum)
                how = "S3's whole-object SHA-256"
            else:
                digest = _sha256_of(body)
                checked, how = Checked(digest, "sha256", digest), f"reading its {size:,} bytes"
        finally:
            body.close()
        return self._as_declared(key, checked, sha256, how, etag)

    def _received(self, call: Callable[..., dict[str, Any]], key: str) -> dict[str, Any]:
        """``call`` (``head_object``, ``get_object``) of ``key`` with S3's checksums;
        UploadIncomplete when no object is there."""
        try:
            return call(Bucket=self.location.bucket, Key=self._key(key), ChecksumMode="ENABLED")
        except ClientError as exc:
            if is_missing(exc):
                raise UploadIncomplete("has not been received") from None
            raise

    def _check_size(self, key: str, stored: int, size: int, etag: str) -> None:
        if stored != size:
            raise self._removed(
                key, etag, f"arrived with {stored:,} bytes; it was declared with {size:,}"
            )

    def _as_declared(
        self, key: str, checked: Checked, sha256: str | None, how: str, etag: str
    ) -> Checked:
        """``checked``, once its digest is the declared one; else the object goes."""
        log.info("checked %s: size, and sha256 by %s", self._key(key), how)
        if sha256 is not None and checked.sha256 != sha256:
            raise self._removed(
                key, etag, f"arrived with sha256 {checked.sha256}; it was declared with {sha256}"
            )
        return checked

    def _removed(self, key: str, etag: str, why: str) -> UploadIncomplete:
        """Why the object checked (``etag``) is not the file, once it is removed: while it
        stays, every PUT of the right bytes gets 412 (``If-None-Match: *``), and a store
        that checks no signed checksum (moto, some S3-compatible ones) keeps wrong bytes.
        Only that object goes: right bytes that replaced it since are left for the next
        ``complete`` to check."""
        if remove_if_unchanged(self.s3, self.location.bucket, self._key(key), etag):
            return UploadIncomplete(why)
        return UploadIncomplete(f"{why}; other bytes have arrived since, to be checked again")

    def _parts_sha256(
        self, key: str, head: Mapping[str, Any], sha256: str | None, digests: PartDigests | None
    ) -> str | None:
        """The declared sha256, when S3's composite checksum of the object is the one of the
        declared parts; None when there is nothing to compare (undeclared parts).

        S3 checked each part's bytes against its signed digest; the composite proves the
        object is those parts, in order, all of them. That the parts make up a file of the
        declared whole-file sha256 is the client's word: no byte is read to check it.
        """
        checksum = head.get("ChecksumSHA256")
        if digests is None or sha256 is None or not checksum:
            return None
        if head.get("ChecksumType") == "FULL_OBJECT":  # not joined from the declared parts
            return None
        expected = composite_sha256(digests.sha256)
        # S3 answers "DIGEST-N"; some S3-compatible stores (moto) leave "-N" out.
        if checksum not in (expected, expected.rsplit("-", 1)[0]):
            raise self._removed(
                key,
                str(head["ETag"]),
                f"arrived with other parts than the declared ones (S3's checksum {checksum}, "
                f"the declared parts' {expected})",
            )
        return sha256

    def _read_sha256(self, key: str, etag: str) -> str:
        """The SHA-256 of the object whose size was checked (``etag``), read back."""
        try:
            got = self.s3.get_object(Bucket=self.location.bucket, Key=self._key(key), IfMatch=etag)
        except ClientError as exc:
            if error_code(exc) != "PreconditionFailed" and not is_missing(exc):
                raise
            raise UploadIncomplete("was replaced while it was checked; complete again") from None
        return _sha256_of(got["Body"])

    # -- downloads, cleanup -----------------------------------------------------------------

    def download_url(self, key: str, *, filename: str, base_url: str) -> str:
        disposition = f"attachment; filename*=UTF-8''{quote(filename, safe='')}"
        return self._presign(
            "get_object",
            self.download_ttl,
            Key=self._key(key),
            ResponseContentDisposition=disposition,
        )

    def open_source(self, key: str, *, sha256: str, size: int | None = None) -> S3Source:
        if size is None:
            size = self._object_size(key)
        if size is None:
            raise FileNotFoundError(
                f"no object {self._key(key)!r} in bucket {self.location.bucket!r}"
            )
        return S3Source(self.s3, self.location.bucket, self._key(key), size)

    def abort_upload(self, key: str, upload_id: str) -> None:
        self.parts.abort(self._key(key), upload_id)

    def delete_prefix(self, prefix: str) -> None:
        full = self._key(prefix) + "/"
        paginator = self.s3.get_paginator("list_multipart_uploads")
        for page in paginator.paginate(Bucket=self.location.bucket, Prefix=full):
            for upload in page.get("Uploads", []):
                self.abort_upload(upload["Key"][len(self._key("")) :], upload["UploadId"])
        keys: list[str] = []
        for page in self.s3.get_paginator("list_objects_v2").paginate(
            Bucket=self.location.bucket, Prefix=full
        ):
            keys.extend(obj["Key"] for obj in page.get("Contents", []))
        self._delete_keys(keys)

    def stored_keys(
        self, after: str | None, limit: int
    ) -> tuple[list[tuple[str, datetime]], str | None]:
        start = len(self._key(""))
        asked: dict[str, Any] = {
            "Bucket": self.location.bucket,
            "Prefix": self._key(""),
            "MaxKeys": limit,
        }
        if after is not None:
            asked["StartAfter"] = self._key(after)
        page = self.s3.list_objects_v2(**asked)
        listed = [(o["Key"][start:], o["LastModified"]) for o in page.get("Contents", [])]
        return listed, listed[-1][0] if listed and page.get("IsTruncated") else None

    def delete_keys(self, keys: Sequence[str]) -> None:
        self._delete_keys([self._key(key) for key in keys])

    def _delete_keys(self, keys: list[str]) -> None:
        for start in range(0, len(keys), 1000):
            batch = [{"Key": key} for key in keys[start : start + 1000]]
            self.s3.delete_objects(
                Bucket=self.location.bucket, Delete={"Objects": batch, "Quiet": True}
            )


def _sha256_of(body: Any) -> str:
    digest = hashlib.sha256()
    for chunk in body.iter_chunks(_READ_CHUNK):
        digest.update(chunk)
    return digest.hexdigest()
