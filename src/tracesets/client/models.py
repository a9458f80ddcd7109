"""Typed results of the client: the service's own wire models (``tracesets.wire``).

A list item (``TracesetSummary``) counts its files; a ``Traceset`` from
``get_traceset`` lists them all (fetched page after page when there are many).

An upload target is either one signed URL for the whole file, or (on S3 storage) a
multipart upload: ``partSize`` and one signed URL per part. Always send the headers given.

A ``Comparison`` (``compare``) holds the first page of its ranks and kernels;
``compare_ranks``, ``compare_kernels`` and ``compare_operators`` page through all.
"""

from __future__ import annotations

from tracesets.wire import (
    FileList,
    PartTarget,
    PromotedTraceset,
    Traceset,
    TracesetFile,
    TracesetList,
    TracesetSummary,
    UploadStatus,
    UploadTarget,
    UploadUrlResponse,
    Usage,
    Whoami,
)
from tracesets.wire.compare import (
    ComparedKernel,
    ComparedKernelsPage,
    ComparedOperator,
    ComparedOperatorsPage,
    ComparedRank,
    ComparedRanksPage,
    Comparison,
    Contributor,
    Headline,
    RankBreakdown,
    RankDifference,
)

__all__ = [
    "ComparedKernel",
    "ComparedKernelsPage",
    "ComparedOperator",
    "ComparedOperatorsPage",
    "ComparedRank",
    "ComparedRanksPage",
    "Comparison",
    "Contributor",
    "FileList",
    "Headline",
    "PartTarget",
    "PromotedTraceset",
    "RankBreakdown",
    "RankDifference",
    "Traceset",
    "TracesetFile",
    "TracesetList",
    "TracesetSummary",
    "UploadStatus",
    "UploadTarget",
    "UploadUrlResponse",
    "Usage",
    "Whoami",
]
