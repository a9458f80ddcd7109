"""The Python client of the Tracesets service: ``Client``, its asyncio twin, one exception.

``Client``, ``AsyncClient`` and the result types (pydantic models) are imported on first
use (PEP 562): the command line and blocking programs do not pay for asyncio's client, nor
an upload for pydantic, nor ``tracesets inspect`` (which reads local files through
``client.files``) for httpx, at start-up.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from tracesets.client.downloads import DownloadSummary
from tracesets.client.errors import ClientError
from tracesets.client.progress import FilesCallback, ProgressCallback

if TYPE_CHECKING:
    from tracesets.client.asynchronous import AsyncClient
    from tracesets.client.models import (
        ComparedKernel,
        ComparedOperator,
        ComparedRank,
        Comparison,
        PartTarget,
        PromotedTraceset,
        Traceset,
        TracesetFile,
        TracesetSummary,
        UploadStatus,
        UploadTarget,
        UploadUrlResponse,
    )
    from tracesets.client.retry import RetryPolicy
    from tracesets.client.sync import Client

__all__ = [
    "AsyncClient",
    "Client",
    "ClientError",
    "ComparedKernel",
    "ComparedOperator",
    "ComparedRank",
    "Comparison",
    "DownloadSummary",
    "FilesCallback",
    "PartTarget",
    "ProgressCallback",
    "PromotedTraceset",
    "RetryPolicy",
    "Traceset",
    "TracesetFile",
    "TracesetSummary",
    "UploadStatus",
    "UploadTarget",
    "UploadUrlResponse",
]


_LAZY = {
    "AsyncClient": "tracesets.client.asynchronous",
    "Client": "tracesets.client.sync",
    "RetryPolicy": "tracesets.client.retry",
    **dict.fromkeys(
        (
            "ComparedKernel",
            "ComparedOperator",
            "ComparedRank",
            "Comparison",
            "PartTarget",
            "PromotedTraceset",
            "Traceset",
            "TracesetFile",
            "TracesetSummary",
            "UploadStatus",
            "UploadTarget",
            "UploadUrlResponse",
        ),
        "tracesets.client.models",
    ),
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'tracesets.client' has no attribute {name!r}")
