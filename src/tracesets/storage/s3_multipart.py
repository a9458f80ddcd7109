"""S3's multipart uploads as the store keeps them: the parts stored so far, the part
digests a client declared (kept beside the file), and the join.

Every function takes the object's full key in the bucket: the store's prefix is the
store's business. The parts are listed once per step (a page of 1,000 a request): a
file of 10,000 parts costs ten requests, never one per part.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any, Final

from botocore.exceptions import ClientError

from tracesets.storage.base import UploadIncomplete
from tracesets.storage.s3_objects import error_code, is_missing, joined_part
from tracesets.uploadrequest import PartDigests

#: Beside a file's key, the part digests its client declared (JSON): resuming signs the
#: missing parts with them again, and ``complete`` checks S3's composite against them.
PARTS_SUFFIX: Final = ".part-sha256"


@dataclass(frozen=True, slots=True)
class StoredPart:
    size: int
    etag: str


def expected_parts(size: int, part_size: int) -> dict[int, int]:
    """Part number → size, for a file of ``size`` bytes sent in ``part_size`` parts."""
    count = max(1, math.ceil(size / part_size))
    return {n: min(part_size, size - (n - 1) * part_size) for n in range(1, count + 1)}


class Multipart:
    """The multipart uploads of one bucket."""

    def __init__(self, s3: Any, bucket: str) -> None:
        self.s3, self.bucket = s3, bucket

    def stored(self, key: str, upload_id: str) -> dict[int, StoredPart] | None:
        """The parts stored so far by number; None if the upload is gone (joined or aborted)."""
        stored: dict[int, StoredPart] = {}
        marker = 0
        while True:
            try:
                page = self.s3.list_parts(
                    Bucket=self.bucket, Key=key, UploadId=upload_id, PartNumberMarker=marker
                )
            except ClientError as exc:
                if is_missing(exc):
                    return None
                raise
            for part in page.get("Parts", []):
                stored[int(part["PartNumber"])] = StoredPart(int(part["Size"]), part["ETag"])
            if not page.get("IsTruncated"):
                return stored
            marker = int(page["NextPartNumberMarker"])

    def sizes(self, key: str, upload_id: str) -> dict[int, int] | None:
        stored = self.stored(key, upload_id)
        return None if stored is None else {n: part.size for n, part in stored.items()}

    def save_digests(self, key: str, parts: PartDigests) -> None:
        body = json.dumps({"partSize": parts.part_size, "sha256": list(parts.sha256)})
        self.s3.put_object(Bucket=self.bucket, Key=key + PARTS_SUFFIX, Body=body.encode())

    def load_digests(self, key: str) -> PartDigests | None:
        """The part digests declared for ``key``; None when its parts were not declared."""
        try:
            got = self.s3.get_object(Bucket=self.bucket, Key=key + PARTS_SUFFIX)
        except ClientError as exc:
            if is_missing(exc):
                return None
            raise
        saved = json.loads(got["Body"].read())
        return PartDigests(int(saved["partSize"]), tuple(str(d) for d in saved["sha256"]))

    def abort(self, key: str, upload_id: str) -> None:
        try:
            self.s3.abort_multipart_upload(Bucket=self.bucket, Key=key, UploadId=upload_id)
        except ClientError as exc:
            if not is_missing(exc):
                raise

    def join(self, key: str, size: int, upload_id: str, digests: PartDigests | None) -> None:
        """Join the stored parts into the object, if they are all there and it is not.

        Nothing to do when the upload is gone (joined by an earlier call): the object's
        own checks follow. An object already at the key is never replaced
        (``If-None-Match``); these parts are then dropped and that object is judged.
        """
        stored = self.stored(key, upload_id)
        if stored is None:
            return
        numbers = sorted(stored)
        total = sum(part.size for part in stored.values())
        if numbers != list(range(1, len(numbers) + 1)) or total != size:
            have = f"{len(numbers)} part(s), {total:,} of {size:,} bytes"
            raise UploadIncomplete(f"has not fully arrived ({have})")
        try:
            self.s3.complete_multipart_upload(
                Bucket=self.bucket,
                Key=key,
                UploadId=upload_id,
                MultipartUpload={
                    "Parts": [joined_part(n, stored[n].etag, digests) for n in numbers]
                },
                IfNoneMatch="*",  # never replace an object already there
            )
        except ClientError as exc:
            if error_code(exc) != "PreconditionFailed":
                raise
            self.abort(key, upload_id)
