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
die with the upload. What ``complete`` checked is what stays. ``finish_upload`` still checks every object before the traceset is
ready: the size always, the sha256 from S3's own checksum where it kept one, else by
reading the object back (S3-compatible stores that do not check checksums exist).
"""

from __future__ import annotations

import base64
import hashlib
import math
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Final
from urllib.parse import quote, urlparse

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

from tracesets.storage.base import PartTarget, UploadIncomplete, UploadPlan

MIB: Final = 1024 * 1024
MIN_PART_SIZE: Final = 5 * MIB  # S3's minimum for every part but the last
MAX_SINGLE_PUT: Final = 5 * 1024**3  # S3 refuses a single PUT above 5 GiB
MAX_PARTS_PER_FILE: Final = 1_000
MAX_PRESIGN_SECONDS: Final = 7 * 24 * 3600  # SigV4's limit
_READ_CHUNK: Final = 8 * MIB


class S3Source:
    """A stored object read by ranges (HTTP Range GETs): inspection reads heads and tails."""

    def __init__(self, s3: Any, bucket: str, key: str, size: int) -> None:
        self._s3, self._bucket, self._key, self._size = s3, bucket, key, size

    @property
    def size(self) -> int:
        return self._size

    def read(self, offset: int, length: int) -> bytes:
        if length <= 0 or offset >= self._size:
            return b""
        last = min(offset + length, self._size) - 1
        body = self._s3.get_object(
            Bucket=self._bucket, Key=self._key, Range=f"bytes={offset}-{last}"
        )["Body"]
        data: bytes = body.read()
        return data


@dataclass(frozen=True)
class S3Location:
    bucket: str
    prefix: str

    @classmethod
    def parse(cls, url: str) -> S3Location:
        parsed = urlparse(url)
        if parsed.scheme != "s3" or not parsed.netloc:
            raise ValueError(
                f"TRACESETS_STORAGE_URL must look like s3://BUCKET/PREFIX; got {url!r}"
            )
        return cls(parsed.netloc, parsed.path.strip("/"))


def part_size_for(size: int, configured: int) -> int:
    """The configured part size, or larger (whole MiB) when the file would need >1,000 parts."""
    needed = math.ceil(size / MAX_PARTS_PER_FILE)
    return max(configured, math.ceil(needed / MIB) * MIB)


def _code(error: ClientError) -> str:
    return str(error.response.get("Error", {}).get("Code", ""))


def _is_missing(error: ClientError) -> bool:
    return _code(error) in {"404", "NoSuchKey", "NoSuchUpload", "NotFound"}


class S3BlobStore:
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
            ),
        )

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

    def plan_upload(self, key: str, *, size: int, sha256: str | None, base_url: str) -> UploadPlan:
        if size > self.multipart_threshold:
            created = self.s3.create_multipart_upload(
                Bucket=self.location.bucket, Key=self._key(key)
            )
            part_size = part_size_for(size, self.part_size)
            numbers = range(1, math.ceil(size / part_size) + 1)
            return self._multipart_plan(key, size, created["UploadId"], part_size, numbers)
        params: dict[str, Any] = {"Key": self._key(key), "ContentLength": size, "IfNoneMatch": "*"}
        headers: dict[str, str] = {"If-None-Match": "*"}
        if sha256 is not None:
            checksum = base64.b64encode(bytes.fromhex(sha256)).decode()
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
    ) -> UploadPlan:
        parts = []
        for number in numbers:
            length = min(part_size, size - (number - 1) * part_size)
            url = self._presign(
                "upload_part",
                self.upload_ttl,
                Key=self._key(key),
                UploadId=upload_id,
                PartNumber=number,
                ContentLength=length,
            )
            parts.append(PartTarget(part_number=number, url=url, size=length))
        return UploadPlan(
            expires_at=self._expires(self.upload_ttl),
            upload_id=upload_id,
            part_size=part_size,
            parts=parts,
        )

    def _stored_parts(self, key: str, upload_id: str) -> dict[int, int] | None:
        """Part number → size of the parts stored so far; None if the upload is gone."""
        stored: dict[int, int] = {}
        marker = 0
        while True:
            try:
                page = self.s3.list_parts(
                    Bucket=self.location.bucket,
                    Key=self._key(key),
                    UploadId=upload_id,
                    PartNumberMarker=marker,
                )
            except ClientError as exc:
                if _is_missing(exc):
                    return None
                raise
            for part in page.get("Parts", []):
                stored[int(part["PartNumber"])] = int(part["Size"])
            if not page.get("IsTruncated"):
                return stored
            marker = int(page["NextPartNumberMarker"])

    def _object_size(self, key: str) -> int | None:
        try:
            head = self.s3.head_object(Bucket=self.location.bucket, Key=self._key(key))
        except ClientError as exc:
            if _is_missing(exc):
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
            return self.plan_upload(key, size=size, sha256=sha256, base_url=base_url)
        stored = self._stored_parts(key, upload_id)
        if stored is None:  # completed already, or aborted: start again unless whole
            if self._object_size(key) == size:
                return None
            return self.plan_upload(key, size=size, sha256=sha256, base_url=base_url)
        wanted = self._expected_parts(size, part_size)
        missing = [n for n, length in wanted.items() if stored.get(n) != length]
        if not missing:
            return None  # every part is in; complete joins them
        return self._multipart_plan(key, size, upload_id, part_size, missing)

    @staticmethod
    def _expected_parts(size: int, part_size: int) -> dict[int, int]:
        count = max(1, math.ceil(size / part_size))
        return {n: min(part_size, size - (n - 1) * part_size) for n in range(1, count + 1)}

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
            stored = self._stored_parts(key, upload_id)
            if stored is not None:
                return stored == self._expected_parts(size, part_size)
        return self._object_size(key) == size

    def drop_superseded(self, prefix: str, kept: Mapping[str, str]) -> None:
        """Nothing to drop: each key holds one object, written once."""

    def finish_upload(
        self, key: str, *, size: int, sha256: str | None, upload_id: str | None
    ) -> str:
        if upload_id is not None:
            self._complete_multipart(key, size, upload_id)
        stored = self._object_size(key)
        if stored is None:
            raise UploadIncomplete("has not been received")
        if stored != size:
            self._delete_keys([self._key(key)])
            raise UploadIncomplete(f"arrived with {stored:,} bytes; it was declared with {size:,}")
        digest = self._stored_sha256(key) or self._read_sha256(key)
        if sha256 is not None and digest != sha256:
            self._delete_keys([self._key(key)])
            raise UploadIncomplete(f"arrived with sha256 {digest}; it was declared with {sha256}")
        return digest

    def _complete_multipart(self, key: str, size: int, upload_id: str) -> None:
        stored = self._stored_parts(key, upload_id)
        if stored is None:
            return  # completed by an earlier call; the object's own checks follow
        numbers = sorted(stored)
        if numbers != list(range(1, len(numbers) + 1)) or sum(stored.values()) != size:
            have = f"{len(numbers)} part(s), {sum(stored.values()):,} of {size:,} bytes"
            raise UploadIncomplete(f"has not fully arrived ({have})")
        listed = self.s3.list_parts(
            Bucket=self.location.bucket, Key=self._key(key), UploadId=upload_id
        )
        etags = {int(p["PartNumber"]): p["ETag"] for p in listed.get("Parts", [])}
        marker = listed.get("NextPartNumberMarker")
        while listed.get("IsTruncated"):
            listed = self.s3.list_parts(
                Bucket=self.location.bucket,
                Key=self._key(key),
                UploadId=upload_id,
                PartNumberMarker=marker,
            )
            etags.update({int(p["PartNumber"]): p["ETag"] for p in listed.get("Parts", [])})
            marker = listed.get("NextPartNumberMarker")
        try:
            self.s3.complete_multipart_upload(
                Bucket=self.location.bucket,
                Key=self._key(key),
                UploadId=upload_id,
                MultipartUpload={"Parts": [{"PartNumber": n, "ETag": etags[n]} for n in numbers]},
                IfNoneMatch="*",  # never replace an object already there
            )
        except ClientError as exc:
            if _code(exc) != "PreconditionFailed":
                raise
            # An object is there already: the checks that follow judge it, and these parts
            # are of no use.
            self.abort_upload(key, upload_id)

    def _stored_sha256(self, key: str) -> str | None:
        """The whole object's SHA-256 as S3 verified it at upload, if it kept one."""
        head = self.s3.head_object(
            Bucket=self.location.bucket, Key=self._key(key), ChecksumMode="ENABLED"
        )
        checksum = head.get("ChecksumSHA256")
        if (
            not checksum
            or "-" in checksum
            or head.get("ChecksumType", "FULL_OBJECT") != "FULL_OBJECT"
        ):
            return None
        return base64.b64decode(checksum).hex()

    def _read_sha256(self, key: str) -> str:
        body = self.s3.get_object(Bucket=self.location.bucket, Key=self._key(key))["Body"]
        digest = hashlib.sha256()
        for chunk in body.iter_chunks(_READ_CHUNK):
            digest.update(chunk)
        return digest.hexdigest()

    # -- downloads, cleanup -----------------------------------------------------------------

    def download_url(self, key: str, *, filename: str, base_url: str) -> str:
        disposition = f"attachment; filename*=UTF-8''{quote(filename, safe='')}"
        return self._presign(
            "get_object",
            self.download_ttl,
            Key=self._key(key),
            ResponseContentDisposition=disposition,
        )

    def open_source(self, key: str, *, sha256: str) -> S3Source:
        size = self._object_size(key)
        if size is None:
            raise FileNotFoundError(
                f"no object {self._key(key)!r} in bucket {self.location.bucket!r}"
            )
        return S3Source(self.s3, self.location.bucket, self._key(key), size)

    def abort_upload(self, key: str, upload_id: str) -> None:
        try:
            self.s3.abort_multipart_upload(
                Bucket=self.location.bucket, Key=self._key(key), UploadId=upload_id
            )
        except ClientError as exc:
            if not _is_missing(exc):
                raise

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

    def _delete_keys(self, keys: list[str]) -> None:
        for start in range(0, len(keys), 1000):
            batch = [{"Key": key} for key in keys[start : start + 1000]]
            self.s3.delete_objects(
                Bucket=self.location.bucket, Delete={"Objects": batch, "Quiet": True}
            )
