"""What the service keeps about a traceset, independent of how it is stored or sent."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from tracesets.performance import UNKNOWN, Performance
from tracesets.vocabulary import Status


@dataclass(frozen=True, slots=True)
class StoredFile:
    idx: int
    name: str
    size: int
    role: str
    sha256_declared: str | None
    sha256: str | None
    received: bool
    upload_id: str | None = None
    part_size: int | None = None
    checked_by: str | None = None  # how complete found it whole (storage.base.Checked)
    checked_checksum: str | None = None

    @property
    def expected_sha256(self) -> str | None:
        """The digest a new upload of this file must match, if any is known."""
        return self.sha256_declared or self.sha256


@dataclass(frozen=True, slots=True)
class InspectionRecord:
    """Where a traceset's inspection stands; ``result`` is its wire JSON, once done."""

    status: str  # pending, running, done, failed
    result: bytes | None


@dataclass(frozen=True, slots=True)
class FileSummary:
    """A traceset's files counted, not listed: what a list item shows of them."""

    count: int
    bytes: int
    received: int


@dataclass(frozen=True, slots=True)
class TracesetHead:
    """A traceset without its files: what every answer about it starts with."""

    seq: int
    id: str
    workspace: str
    name: str
    description: str | None
    status: Status
    created_at: datetime
    updated_at: datetime
    promoted_at: datetime | None
    workload_metadata: bytes | None  # compact JSON text exactly as stored
    rank_count: int | None


@dataclass(frozen=True, slots=True)
class ListedTraceset(TracesetHead):
    """A list item: the file summary and the inspection's status, never a file's row.

    ``inspection_ok`` is the stored verdict (done and nothing disagrees); both are None
    when the traceset has no inspection.
    """

    file_summary: FileSummary
    inspection_status: str | None
    inspection_ok: bool | None
    #: The done inspection's figures (unknown ones None); they also make a sorted cursor.
    performance: Performance = UNKNOWN


@dataclass(frozen=True, slots=True)
class Traceset(TracesetHead):
    """A traceset with its files: all of them, or, read for an answer, the first page of
    them and ``counted``, the database's count of all."""

    files: list[StoredFile]
    inspection: InspectionRecord | None = None
    counted: FileSummary | None = None
    #: The traceset compared with: the one its inspection used, else the one it named.
    baseline_id: str | None = None

    @property
    def file_summary(self) -> FileSummary:
        if self.counted is not None:
            return self.counted
        return FileSummary(
            count=len(self.files),
            bytes=sum(f.size for f in self.files),
            received=sum(1 for f in self.files if f.received),
        )

    def file_named(self, name: str) -> StoredFile | None:
        return next((f for f in self.files if f.name == name), None)

    def file_at(self, idx: int) -> StoredFile | None:
        return self.files[idx] if 0 <= idx < len(self.files) else None


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
