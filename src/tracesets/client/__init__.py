"""The Python client of the Tracesets service: ``Client``, its asyncio twin, one exception.

``AsyncClient`` is imported on first use (PEP 562): the command line and blocking
programs do not pay for asyncio's client at start-up.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tracesets.client.downloads import DownloadSummary
from tracesets.client.errors import ClientError
from tracesets.client.models import (
    PartTarget,
    PromotedTraceset,
    Traceset,
    TracesetFile,
    TracesetSummary,
    UploadStatus,
    UploadTarget,
    UploadUrlResponse,
)
from tracesets.client.progress import FilesCallback, ProgressCallback
from tracesets.client.retry import RetryPolicy
from tracesets.client.sync import Client

if TYPE_CHECKING:
    from tracesets.client.asynchronous import AsyncClient

__all__ = [
    "AsyncClient",
    "Client",
    "ClientError",
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


def __getattr__(name: str) -> Any:
    if name == "AsyncClient":
        from tracesets.client.asynchronous import AsyncClient

        globals()[name] = AsyncClient
        return AsyncClient
    raise AttributeError(f"module 'tracesets.client' has no attribute {name!r}")
