"""The JSON shapes on the wire, as pydantic models.

The server describes its OpenAPI document with them and the client parses answers
into them. The service itself checks requests with the pure rules (``workload``,
``uploadrequest``), not with these models: pydantic cannot tell ``2`` from ``2.0``
once JSON is parsed, and the rules must.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from tracesets.jsontext import JsonNumber
from tracesets.uploadrequest import MAX_PARTS
from tracesets.vocabulary import MAX_FILES_PER_REQUEST, MAX_RANK_COUNT, Status

RANK_COUNT_RULES = (
    "An upload that contains primary trace files must declare its rank count through "
    "shape.rankCount, the parallelism degrees, or both. Each of shape.rankCount, dp, tp, sp, "
    'ep and pp that you give must be a whole number of at least 1 (0, -1, 2.0 and "4" are '
    "refused). When both forms are given, shape.rankCount must equal the product "
    "dp·tp·sp·ep·pp (an absent degree counts as 1). The rank count must not exceed "
    "2,147,483,647. JSON null counts as absent, for shape, parallelism and each value inside "
    "them. The key is rankCount: a shape.rank_count is not read as a declaration."
)


def _figure(value: object) -> object:
    """The client reads answers exactly (``jsontext``): a measured figure is a float here."""
    return float(value.text) if isinstance(value, JsonNumber) else value


#: A measurement (µs, a percentage), sent as a JSON number with a fraction.
Figure = Annotated[float, BeforeValidator(_figure)]


class _Open(BaseModel):
    """Members beyond the described ones are allowed and stored as given."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)


class WorkloadShape(_Open):
    """Workload scale. Other members of shape are stored and returned as given."""

    rankCount: int | None = Field(
        default=None,
        ge=1,
        le=MAX_RANK_COUNT,
        description="Total rank count. When parallelism degrees are also given, their product "
        "must equal it.",
    )


class WorkloadParallelism(_Open):
    """Parallelism degrees. The rank count is the product dp·tp·sp·ep·pp; an absent degree
    counts as 1. Other members, such as cp and fsdp, are stored and returned as given; upload
    does not check them, promotion checks cp and fsdp. Neither is a factor of the product. A
    parallelism that holds none of dp, tp, sp, ep and pp declares nothing, and promotion
    refuses it."""

    dp: int | None = Field(
        default=None,
        ge=1,
        description="Data parallelism degree: the number of data-parallel ranks, each processing "
        "its own share of the global batch and synchronizing gradients with the others. Without "
        "FSDP each holds a full replica of the model; with fsdp, each group of fsdp of them holds "
        "one replica between them, so there are dp ÷ fsdp replicas.",
    )
    tp: int | None = Field(
        default=None,
        ge=1,
        description="Tensor parallelism degree: the number of ranks that split each layer's weight "
        "matrices, and the layer's computation, between them.",
    )
    sp: int | None = Field(
        default=None,
        ge=1,
        description="Sequence parallelism degree: the number of ranks that split each input "
        "sequence along its length.",
    )
    ep: int | None = Field(
        default=None,
        ge=1,
        description="Expert parallelism degree: the number of ranks a mixture-of-experts (MoE) "
        "model's experts are distributed across, each rank holding a subset of the experts and "
        "exchanging tokens with the others.",
    )
    pp: int | None = Field(
        default=None,
        ge=1,
        description="Pipeline parallelism degree: the number of pipeline stages, each a contiguous "
        "group of the model's layers on its own ranks, that microbatches pass through in turn.",
    )


class UploadWorkloadMetadata(_Open):
    __doc__ = (
        "Describes the workload a traceset was captured from. Every member is optional. Upload "
        "stores and returns the whole object as given, up to 65,536 bytes when serialized "
        "(compact UTF-8 JSON), and validates only the rank-count members. "
        + RANK_COUNT_RULES
        + " Descriptive members (workload_family, workload_name, precision, accelerator, "
        "shape.global_batch_size, …) are stored as given; promotion and the list's filters read "
        "them in snake_case."
    )

    shape: WorkloadShape | None = Field(default=None, description="Workload scale.")
    parallelism: WorkloadParallelism | None = Field(
        default=None, description="Parallelism degrees."
    )


class UploadFileSpec(BaseModel):
    name: str = Field(
        min_length=1,
        max_length=1024,
        description="Relative path, unique within the traceset: no leading /, no .. segment, no "
        "backslash, no NUL, at most 1,024 bytes.",
    )
    size: int = Field(ge=0, le=5 * 1024**4, description="Size in bytes, 0 to 5 TiB.")
    role: Literal["primary", "supporting"]
    sha256: str | None = Field(
        default=None,
        pattern="^[0-9a-f]{64}$",
        description="Optional: the upload is refused unless its bytes have this digest.",
    )
    partSize: int | None = Field(
        default=None,
        ge=5 * 1024**2,
        le=5 * 1024**3,
        description="Optional, with partSha256 and sha256: the part size the client chose. "
        "Where the store takes the file in parts (S3), they are this size, the last one "
        "the rest.",
    )
    partSha256: list[Annotated[str, Field(pattern="^[0-9a-f]{64}$")]] | None = Field(
        default=None,
        max_length=MAX_PARTS,
        description="Optional, with partSize and sha256: the SHA-256 of each part, part 1 first "
        "(64 lowercase hex digits each). A store that takes the file in parts signs each "
        "digest into its part's URL (it refuses other bytes) and checks the whole file at "
        "complete from its own checksums of the parts, without reading it back.",
    )


class UploadUrlRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=256)
    description: str | None = Field(default=None, max_length=16_384)
    files: list[UploadFileSpec] = Field(min_length=1, max_length=MAX_FILES_PER_REQUEST)
    workloadMetadata: UploadWorkloadMetadata | None = None


class AddFilesRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    files: list[UploadFileSpec] = Field(
        min_length=1,
        max_length=MAX_FILES_PER_REQUEST,
        description="Files to add, by upload-url's rules; names unique within the traceset, "
        "except one declared again with the same size, role and sha256.",
    )


class PartTarget(BaseModel):
    partNumber: int = Field(ge=1, description="Parts are numbered from 1.")
    url: str = Field(description="Presigned URL: PUT exactly `size` bytes here, with `headers`.")
    size: int = Field(
        ge=0, description="The part's bytes: offset (partNumber − 1) × partSize of the file."
    )
    headers: dict[str, str]


class UploadTarget(BaseModel):
    """Where one file goes: a single PUT to `url`, or, for a large file on S3 storage, one
    PUT per entry of `parts` (then `url` is null). Always send the `headers` given."""

    name: str
    role: Literal["primary", "supporting"]
    method: Literal["PUT"]
    url: str | None = Field(
        description="Signed URL: PUT the file's exact bytes here, with `headers`; null when the "
        "file is sent in `parts`."
    )
    headers: dict[str, str]
    expiresAt: datetime
    partSize: int | None = Field(
        default=None, description="Multipart only: every part but the last has this size."
    )
    parts: list[PartTarget] | None = Field(
        default=None,
        description="Multipart only: the parts to send. After an interruption, "
        "GET …/uploads lists only the parts still missing, with fresh URLs.",
    )


class UploadUrlResponse(BaseModel):
    tracesetId: str
    uploads: list[UploadTarget]
    uploadsNextCursor: str | None = Field(
        default=None,
        description="Present only when the answer left out some files' upload entries, to "
        "stay within about 4 MiB of URLs (thousands of files, or files of many parts on S3): "
        "pass it as `cursor` to GET /api/v1/tracesets/{id}/uploads, and on with its "
        "`nextCursor`, for fresh entries from the first file left out on.",
    )


class UploadStatus(BaseModel):
    tracesetId: str
    status: Status
    received: list[str] = Field(description="Files whose bytes have all arrived.")
    uploads: list[UploadTarget] = Field(
        description="Fresh URLs for every file not yet whole; for multipart files, only the "
        "parts still missing."
    )
    nextCursor: str | None = Field(
        default=None,
        description="null when this page reached the last file; else pass it as `cursor` for "
        "the files after it.",
    )


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


class InspectedFile(BaseModel):
    file: str = Field(description="The traceset's file.")
    member: str | None = Field(description="The archive member holding this trace, if any.")
    format: str = Field(
        description="kineto-json, kineto-json-gzip, chakra-host-et, et, nsys-rep or unknown."
    )
    size: int
    rank: int | None
    worldSize: int | None
    backend: str | None
    rankSource: Literal["header", "tail", "file name"] | None
    problem: str | None = Field(description="Why the trace could not be read, or has no rank.")


class RankSteps(BaseModel):
    count: int = Field(description="How many ProfilerStep#N the trace holds.")
    minUs: Figure | None
    medianUs: Figure | None
    maxUs: Figure | None


class RankGpuTime(BaseModel):
    """GPU time with Holistic Trace Analysis's definitions (docs/contract-notes.md)."""

    kernelUs: Figure = Field(description="From the first GPU event's start to the last one's end.")
    idleUs: Figure
    computeUs: Figure
    nonComputeUs: Figure = Field(description="Communication, memory and other GPU time.")
    idlePct: Figure | None = Field(description="Of kernelUs, two decimals.")
    computePct: Figure | None
    nonComputePct: Figure | None
    communicationUs: Figure = Field(description="Communication while no computation runs.")
    memoryUs: Figure = Field(
        description="Copies and sets while no computation or communication runs."
    )
    otherUs: Figure
    overlapPct: Figure | None = Field(
        description="Share of communication time overlapped by computation; null without any."
    )
    kernels: int


class CollectiveCount(BaseModel):
    count: int
    bytes: int | None = Field(description="Input bytes in all; null when no call recorded them.")


class GroupCollectives(BaseModel):
    group: str = Field(description="The process group's name (pg_name), or unknown.")
    description: str | None
    ranks: list[int] | None
    ops: dict[str, CollectiveCount] = Field(description="By collective, e.g. allreduce.")


class RankFigures(BaseModel):
    """What one trace's events say, read once through after `complete`."""

    rank: int | None
    file: str
    member: str | None
    events: int
    steps: RankSteps
    gpu: RankGpuTime | None = Field(description="null for a trace without GPU events.")
    collectives: list[GroupCollectives]
    straggler: bool
    problem: str | None = Field(description="Why the events could not all be read.")


class RankFiguresPage(BaseModel):
    items: list[RankFigures]
    nextCursor: str | None = Field(
        description="Pass as `cursor` for the next page; null on the last."
    )


class Inspection(BaseModel):
    """What the primary files' traces say about their ranks, read after `complete`."""

    status: Literal["pending", "done", "failed"]
    ranksFound: list[int]
    worldSize: int | None = Field(description="The world size every trace agrees on, else null.")
    worldSizes: list[int] = Field(description="Every world size found.")
    missingRanks: list[int] = Field(
        description="Ranks 0…N−1 with no trace, N being the declared rank count (else the world size)."
    )
    missingRankCount: int = Field(
        description="How many ranks are missing; missingRanks lists at most 65,536 of them."
    )
    duplicateRanks: list[int]
    unreadable: list[str]
    warnings: list[str] = Field(
        description="Every disagreement with rankCountDerived, and between ranks, in words."
    )
    files: list[InspectedFile]
    truncated: bool = Field(
        default=False,
        description="True when the lists were cut to keep the answer bounded (each keeps its "
        "first 256 KiB of JSON once the inspection passes 2 MiB); the counts stay exact.",
    )
    perRank: list[RankFigures] = Field(
        default_factory=list,
        description="Each trace's figures in rank order, the first 256; "
        "GET /api/v1/tracesets/{id}/ranks pages through all of them.",
    )
    perRankCount: int = Field(default=0, description="How many traces have figures.")
    stragglers: list[int] = Field(default_factory=list)
    desyncedGroups: list[str] = Field(
        default_factory=list,
        description="Process groups whose members issued different numbers of a collective.",
    )


class InspectionVerdict(BaseModel):
    """A list item's view of the inspection: where it stands, and whether all agrees."""

    status: Literal["pending", "done", "failed"]
    ok: bool | None = Field(
        description="true: the traces agree with the declaration; false: they disagree, or "
        "inspection failed; null while pending."
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


class Whoami(BaseModel):
    """What a token opens: its workspace and its scopes, in the order read, write, promote."""

    workspace: str
    scopes: list[Literal["read", "write", "promote"]]
