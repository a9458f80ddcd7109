"""The JSON shapes on the wire, as pydantic models.

The server describes its OpenAPI document with them and the client parses answers
into them. The service itself checks requests with the pure rules (``workload``,
``uploadrequest``), not with these models: pydantic cannot tell ``2`` from ``2.0``
once JSON is parsed, and the rules must.
"""

from tracesets.wire.answers import (
    FileCheck,
    FileList,
    Health,
    ProblemDetails,
    ProblemItem,
    PromotedTraceset,
    PromoteRequest,
    Traceset,
    TracesetFile,
    TracesetList,
    TracesetSummary,
    Whoami,
)
from tracesets.wire.inspection import (
    CollectiveCount,
    Figure,
    GroupCollectives,
    InspectedFile,
    Inspection,
    InspectionVerdict,
    RankFigures,
    RankFiguresPage,
    RankGpuTime,
    RankSteps,
)
from tracesets.wire.uploads import (
    RANK_COUNT_RULES,
    AddFilesRequest,
    PartTarget,
    UploadFileSpec,
    UploadStatus,
    UploadTarget,
    UploadUrlRequest,
    UploadUrlResponse,
    UploadWorkloadMetadata,
    WorkloadParallelism,
    WorkloadShape,
)

__all__ = [
    "RANK_COUNT_RULES",
    "AddFilesRequest",
    "CollectiveCount",
    "Figure",
    "FileCheck",
    "FileList",
    "GroupCollectives",
    "Health",
    "InspectedFile",
    "Inspection",
    "InspectionVerdict",
    "PartTarget",
    "ProblemDetails",
    "ProblemItem",
    "PromoteRequest",
    "PromotedTraceset",
    "RankFigures",
    "RankFiguresPage",
    "RankGpuTime",
    "RankSteps",
    "Traceset",
    "TracesetFile",
    "TracesetList",
    "TracesetSummary",
    "UploadFileSpec",
    "UploadStatus",
    "UploadTarget",
    "UploadUrlRequest",
    "UploadUrlResponse",
    "UploadWorkloadMetadata",
    "Whoami",
    "WorkloadParallelism",
    "WorkloadShape",
]
