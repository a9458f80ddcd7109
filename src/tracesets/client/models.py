"""Typed results of the client: the service's own wire models (``tracesets.wire``).

An upload target is either one signed URL for the whole file, or (on S3 storage) a
multipart upload: ``partSize`` and one signed URL per part. Always send the headers given.
"""

from __future__ import annotations

from tracesets.wire import (
    PartTarget,
    PromotedTraceset,
    Traceset,
    TracesetFile,
    TracesetList,
    UploadStatus,
    UploadTarget,
    UploadUrlResponse,
)

__all__ = [
    "PartTarget",
    "PromotedTraceset",
    "Traceset",
    "TracesetFile",
    "TracesetList",
    "UploadStatus",
    "UploadTarget",
    "UploadUrlResponse",
]
