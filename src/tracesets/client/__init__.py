"""The Python client of the Tracesets service: ``Client``, its asyncio twin, one exception."""

from tracesets.client.asynchronous import AsyncClient
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
from tracesets.client.progress import ProgressCallback
from tracesets.client.retry import RetryPolicy
from tracesets.client.sync import Client

__all__ = [
    "AsyncClient",
    "Client",
    "ClientError",
    "DownloadSummary",
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
