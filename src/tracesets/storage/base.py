"""What the service asks of a file store, whatever holds the bytes.

Two stores implement it: ``LocalBlobStore`` (a folder; the service receives the bytes
itself through its own signed URLs) and ``S3BlobStore`` (a bucket; clients send the
bytes straight to presigned URLs and the service never sees them). One setting picks
the store, and one test suite runs against both.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

from tracesets.inspection.source import ByteSource
from tracesets.records import Checked
from tracesets.uploadrequest import PartDigests


def blob_key(traceset_id: str, idx: int) -> str:
    """Where file ``idx`` of a traceset is stored: the one place the key's shape is decided."""
    return f"{traceset_id}/{idx}"


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


class UploadIncomplete(Exception):
    """The file's bytes are not all in the store, or not the declared ones; says which."""


class BlobStore(Protocol):
    #: How many files ``complete`` checks at once: a remote store answers each check in
    #: a round trip, so a traceset of 100,000 files waits on them side by side; a local
    #: one reads its own disk, where one at a time is as fast.
    checks_at_once: int
    #: Whether each read of a file is a round trip to another machine: the inspection
    #: queue then fetches a batch's files ahead of their reading, on threads.
    remote: bool

    @property
    def multipart_threshold(self) -> int | None:
        """Files of more bytes than this go in parts, a URL a part (None: every file in
        one PUT). Clients learn it from whoami: a part's SHA-256, declared for S3 to
        check, is a second hash of the same bytes, worth it only where there are parts."""
        ...

    def check(self) -> None:
        """Raise, saying why, unless the store answers (a cheap call: no file is read)."""
        ...

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

    def checked_at_upload(self, prefix: str) -> Mapping[str, int]:
        """Size by key, under ``prefix/``, of the objects the store itself checked against
        the sha256 signed into their single upload URL, found without a request per key
        (a listing); ``complete`` takes those as having the declared digest. Empty where
        the store cannot tell (then each file is finished one by one)."""
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

    def open_source(self, key: str, *, sha256: str, size: int | None = None) -> ByteSource:
        """Ranged reads of a stored file (of digest ``sha256``), for inspection (never the
        whole file at once); ``size``, when the caller knows it, spares the store a look."""
        ...

    def abort_upload(self, key: str, upload_id: str) -> None:
        """Drop a multipart upload's parts; nothing if it is already gone."""
        ...

    def delete_prefix(self, prefix: str) -> None:
        """Remove every object of a traceset (everything under ``prefix/``)."""
        ...

    def stored_keys(
        self, after: str | None, limit: int
    ) -> tuple[list[tuple[str, datetime]], str | None]:
        """One page of up to ``limit`` keys the store holds, in key order after ``after``,
        each with when it was written, and the key the next page starts after (None: this
        was the last), for the sweep of objects without rows (``service.orphans``)."""
        ...

    def delete_keys(self, keys: Sequence[str]) -> None:
        """Remove these objects (keys as ``stored_keys`` gives them)."""
        ...
