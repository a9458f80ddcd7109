"""S3's objects as the store sees them: where they are, how one is read, its checksums."""

from __future__ import annotations

import base64
import hashlib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import urlparse

from botocore.exceptions import ClientError

from tracesets.uploadrequest import PartDigests
from tracesets.vocabulary import PLANNED_PARTS_MAX

MIB: Final = 1024 * 1024

#: An object this small is fetched whole at its first read and read from memory after:
#: a trace of a few KiB costs one request, not one per range its inspection reads.
WHOLE_BELOW: Final = 64 * 1024


class S3Source:
    """A stored object read by ranges (HTTP Range GETs): inspection reads heads and tails."""

    def __init__(self, s3: Any, bucket: str, key: str, size: int) -> None:
        self._s3, self._bucket, self._key, self._size = s3, bucket, key, size
        self._whole: bytes | None = None

    @property
    def size(self) -> int:
        return self._size

    def read(self, offset: int, length: int) -> bytes:
        if length <= 0 or offset >= self._size:
            return b""
        if self._size <= WHOLE_BELOW:
            if self._whole is None:
                got = self._s3.get_object(Bucket=self._bucket, Key=self._key)
                self._whole = bytes(got["Body"].read())
            return self._whole[offset : offset + length]
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
    needed = math.ceil(size / PLANNED_PARTS_MAX)
    return max(configured, math.ceil(needed / MIB) * MIB)


def b64_sha256(hex_digest: str) -> str:
    return base64.b64encode(bytes.fromhex(hex_digest)).decode()


def composite_sha256(part_sha256: Sequence[str]) -> str:
    """S3's checksum of an object joined from SHA-256-checked parts: base64 of the SHA-256
    of the parts' digests end to end, then ``-`` and the number of parts."""
    joined = hashlib.sha256(b"".join(bytes.fromhex(d) for d in part_sha256)).digest()
    return f"{base64.b64encode(joined).decode()}-{len(part_sha256)}"


def error_code(error: ClientError) -> str:
    return str(error.response.get("Error", {}).get("Code", ""))


def is_missing(error: ClientError) -> bool:
    return error_code(error) in {"404", "NoSuchKey", "NoSuchUpload", "NotFound"}


def remove_if_unchanged(s3: Any, bucket: str, key: str, etag: str) -> bool:
    """Remove the object at ``key`` if it is still the one of ``etag`` (a conditional
    delete, ``If-Match``); False when other bytes are there now, which are left alone.

    A check found the object wrong, then another removed it and the right bytes came
    (``If-None-Match: *`` lets them in once the key is empty): a plain delete here would
    take those. Gone already counts as removed.
    """
    try:
        s3.delete_object(Bucket=bucket, Key=key, IfMatch=etag)
    except ClientError as exc:
        if error_code(exc) in {"PreconditionFailed", "ConditionalRequestConflict"}:
            return False
        if not is_missing(exc):
            raise
    return True


def joined_part(number: int, etag: str, digests: PartDigests | None) -> dict[str, Any]:
    """One part of CompleteMultipartUpload; an upload with checksums names each part's."""
    part: dict[str, Any] = {"PartNumber": number, "ETag": etag}
    if digests is not None and number <= len(digests.sha256):
        part["ChecksumSHA256"] = b64_sha256(digests.sha256[number - 1])
    return part


def stored_sha256(head: Mapping[str, Any]) -> str | None:
    """The whole object's SHA-256 as S3 verified it at upload, if it kept one."""
    checksum = head.get("ChecksumSHA256")
    if not checksum or "-" in checksum or head.get("ChecksumType", "FULL_OBJECT") != "FULL_OBJECT":
        return None
    return base64.b64decode(checksum).hex()
