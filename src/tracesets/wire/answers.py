"""The shapes of the answers about tracesets: one, a list, a page of files, errors."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from tracesets.vocabulary import Status
from tracesets.wire.inspection import Inspection, InspectionVerdict
from tracesets.wire.uploads import UploadWorkloadMetadata


class FileCheck(BaseModel):
    by: Literal["sha256", "s3-sha256", "s3-composite-sha256"] = Field(
        description="sha256: the service hashed every byte (as they arrived, or reading the "
        "object back). s3-sha256: S3's SHA-256 of the whole object, which S3 checked at "
        "upload. s3-composite-sha256: S3's composite checksum (the SHA-256 of the parts' "
        "SHA-256, each part checked by S3 against its declared digest) equal to the declared "
        "parts'; the whole file's sha256 is then the client's declaration."
    )
    checksum: str = Field(
        description="The value that vouched, as its source writes it: 64 hex digits for "
        "sha256, S3's base64 (with -N, the part count, for a composite) otherwise."
    )


class TracesetFile(BaseModel):
    name: str
    size: int
    role: Literal["primary", "supporting"]
    sha256: str | None = Field(description="Declared digest, or the digest of the bytes received.")
    received: bool
    checked: FileCheck | None = Field(
        default=None,
        description="How complete found the file's bytes to be the declared ones; null "
        "before complete (and for files completed before the service recorded it).",
    )


class _TracesetHead(BaseModel):
    id: str
    name: str
    description: str | None
    status: Status
    createdAt: datetime
    updatedAt: datetime
    promotedAt: datetime | None
    fileCount: int = Field(description="How many files the traceset holds.")
    fileBytes: int = Field(description="Their sizes added up, in bytes.")
    filesReceived: int = Field(description="How many of them have arrived whole.")


class Traceset(_TracesetHead):
    files: list[TracesetFile] = Field(
        description="In index order (as declared): every file when they fit in one page (1,000 "
        "files and 2 MiB of JSON), else the first page; filesNextCursor names the rest."
    )
    filesNextCursor: str | None = Field(
        description="null when files lists them all; else pass it as `cursor` to "
        "GET /api/v1/tracesets/{id}/files for the next page."
    )
    workloadMetadata: dict[str, Any] | None = Field(
        description="Exactly as stored: same members, order and number literals."
    )
    rankCountDerived: int | None = Field(
        description="The declared rank count; null when nothing is declared. Never changes."
    )
    baselineId: str | None = Field(
        default=None,
        description="The traceset this one is compared with when its inspection finishes: "
        "the one upload-url named, else the most recently promoted one of the same workload "
        "family, name and rank count; null when none.",
    )
    inspection: Inspection | None = Field(
        default=None, description="null until the traceset is complete, or without primary files."
    )


class TracesetSummary(_TracesetHead):
    """A list item: the traceset with its files counted, not listed."""

    workloadMetadata: dict[str, Any] | None = Field(
        description="Exactly as stored: same members, order and number literals."
    )
    rankCountDerived: int | None = Field(
        description="The declared rank count; null when nothing is declared. Never changes."
    )
    inspection: InspectionVerdict | None = Field(
        description="null until the traceset is complete, or without primary files. GET the "
        "traceset for what the inspection found."
    )


class FileList(BaseModel):
    """One page of a traceset's files, in index order."""

    items: list[TracesetFile]
    nextCursor: str | None = Field(
        description="Pass as `cursor` for the next page; null on the last."
    )


class PromoteRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    workloadMetadata: UploadWorkloadMetadata | None = Field(
        default=None,
        description="Replaces the stored object if promotion succeeds; absent or null: the "
        "stored object is checked.",
    )


class PromotedTraceset(Traceset):
    warnings: list[str] = Field(
        description="Descriptive members promotion does not read because of their spelling "
        "(workloadFamily where workload_family is meant, and the like); then what the traces' "
        "inspection says against the rank count, or, while inspection.status is pending, one "
        "sentence saying the inspection has not finished."
    )


class TracesetList(BaseModel):
    items: list[TracesetSummary]
    nextCursor: str | None = Field(
        description="Pass as `cursor` for the next page; null on the last."
    )


class ProblemItem(BaseModel):
    member: str = Field(
        description="Dotted path, e.g. workloadMetadata.parallelism.dp or files[0].size."
    )
    value: Any = Field(description="The JSON value given.")
    message: str


class ProblemDetails(BaseModel):
    """RFC 9457 problem details; ``errors`` lists every problem found."""

    type: str
    title: str
    status: int
    detail: str
    errors: list[ProblemItem]


class Health(BaseModel):
    status: Literal["ok"]


class Readiness(BaseModel):
    """The database answers at this version's migration, and the file store answers."""

    status: Literal["ready"]


class TracesetCounts(BaseModel):
    pending: int
    ready: int
    promoted: int


class Usage(BaseModel):
    """What the caller's workspace holds, and the quota it may hold."""

    tracesets: TracesetCounts
    files: int = Field(description="Every file of the workspace's tracesets, declared or received.")
    bytesStored: int = Field(description="The sizes of the files received, summed.")
    bytesPending: int = Field(
        description="The declared sizes of the files not received yet, in pending tracesets."
    )
    quotaBytes: int | None = Field(
        description="The most bytes the workspace may hold, stored plus pending "
        "(`TRACESETS_QUOTA_BYTES`); null: no quota. An upload-url or add-files request "
        "that would pass it is refused (413) before anything is stored."
    )


class Whoami(BaseModel):
    """What a token opens: its workspace and its scopes, in the order read, write, promote,
    metrics; and how its uploads go, for a client to prepare them."""

    workspace: str
    scopes: list[Literal["read", "write", "promote", "metrics"]]
    multipartThreshold: int | None = Field(
        description="Files of more bytes than this are uploaded in parts, a URL a part; "
        "null: every file in one PUT. A client declares `partSize` and `partSha256` only "
        "for those (elsewhere the service ignores them, and each part's digest is a second "
        "SHA-256 of the same bytes)."
    )
