"""What the service asks of a file store, whatever holds the bytes.

Two stores implement it: ``LocalBlobStore`` (a folder; the service receives the bytes
itself through its own signed URLs) and ``S3BlobStore`` (a bucket; clients send the
bytes straight to presigned URLs and the service never sees them). One setting picks
the store, and one test suite runs against both.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

from tracesets.inspection.source import ByteSource
from tracesets.uploadrequest import PartDigests


@dataclass(frozen=True, slots=True)
class PartTarget:
    """One part of a multipart upload: PUT exactly ``size`` bytes to ``url`` with ``headers``."""

    part_number: int
    url: str
    size: int
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class UploadPlan:
    """Where a file's bytes go: one PUT to ``url``, or one PUT per part of ``parts``.

    ``upload_id`` names a multipart upload in the store; the service keeps it, so any
    process can resume or finish the upload.
    """

    expires_at: datetime
    url: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    upload_id: str | None = None
    part_size: int | None = None
    parts: list[PartTarget] | None = None


@dataclass(frozen=True, slots=True)
class Checked:
    """How ``complete`` found a file's bytes to be the declared ones, kept with the file.

    ``by`` says who vouched for them: ``sha256``, the service hashed every byte (as it
    arrived, or reading the object back); ``s3-sha256``, S3's SHA-256 of the whole
    object, checked by S3 at upload; ``s3-composite-sha256``, S3's composite checksum
    (the SHA-256 of the parts' SHA-256, each checked by S3 at upload) equal to the one
    of the declared parts. ``checksum`` is the value that vouched, as its source wrote it.
    """

    sha256: str
    by: str
    checksum: str


class UploadIncomplete(Exception):
    """The file's bytes are not all in the store, or not the declared ones; says which."""


class BlobStore(Protocol):
    def plan_upload(
        self,
        key: str,
        *,
        size: int,
        sha256: str | None,
        base_url: str,
        parts: PartDigests | None = None,
    ) -> UploadPlan:
        """Start an upload of ``size`` bytes as ``key`` and say where to send them; ``parts``
        where the client declared its parts' digests (a store may ignore them)."""
        ...

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
        """Fresh URLs for what has not arrived yet (only the missing parts); None when whole."""
        ...

    def finish_upload(
        self, key: str, *, size: int, sha256: str | None, upload_id: str | None
    ) -> Checked:
        """Check that ``key`` holds the declared bytes (size, and sha256 if given) and say
        how (their sha256 with it); raise UploadIncomplete naming what is missing or wrong."""
        ...

    def arrived(
        self,
        key: str,
        *,
        size: int,
        sha256: str | None,
        upload_id: str | None,
        part_size: int | None,
    ) -> bool:
        """Whether all of ``key``'s bytes are in the store; starts and changes nothing."""
        ...

    def drop_superseded(self, prefix: str, kept: Mapping[str, str]) -> None:
        """After ``complete``: remove bytes under ``prefix/`` that are none of its files
        (``kept``: key → sha256), such as uploads replaced before it."""
        ...

    def download_url(self, key: str, *, filename: str, base_url: str) -> str: ...

    def open_source(self, key: str, *, sha256: str) -> ByteSource:
        """Ranged reads of a stored file (of digest ``sha256``), for inspection (never the
        whole file at once)."""
        ...

    def abort_upload(self, key: str, upload_id: str) -> None:
        """Drop a multipart upload's parts; nothing if it is already gone."""
        ...

    def delete_prefix(self, prefix: str) -> None:
        """Remove every object of a traceset (everything under ``prefix/``)."""
        ...
