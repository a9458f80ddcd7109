"""The shapes of an upload: what a client declares, and where it sends each file."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

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
        description="Relative path in its one spelling, unique within the traceset: no "
        "leading /, no .. or . segment, no empty segment (// or a trailing /), no drive "
        "(C:), no backslash, no NUL, no control or invisible formatting character, at most "
        "1,024 bytes. Names equal up to case or Unicode normalization (NFC) are one name, "
        "and a name cannot be both a file and the folder of another (x beside x/y).",
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
    baselineId: str | None = Field(
        default=None,
        pattern=r"^[0-9a-f]{32}$",
        description="A traceset of the same workspace to compare this one with when its "
        "inspection finishes (400 otherwise); without it, the most recently promoted "
        "traceset of the same workload family, name and rank count.",
    )


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
