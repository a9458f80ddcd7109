"""GET /api/v1/usage: what the caller's workspace holds, and its quota."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.concurrency import run_in_threadpool

from tracesets.api.deps import ReadWorkspace, Service
from tracesets.api.openapi import errors
from tracesets.wire import Usage

router = APIRouter(prefix="/api/v1", tags=["access"])


@router.get(
    "/usage",
    summary="The tracesets, files and bytes of the token's workspace, and its quota",
    description="Tracesets by status; every file of them, declared or received; the bytes "
    "received (`bytesStored`) and the bytes declared but not received yet in pending "
    "tracesets (`bytesPending`). A quota (`quotaBytes`, null when none) counts both: "
    "upload-url and add-files answer 413 when the files they declare would pass it.",
    response_model=Usage,
    responses=errors(401, 403, 429),
)
async def usage(service: Service, workspace: ReadWorkspace) -> Usage:
    found = await run_in_threadpool(service.usage, workspace)
    totals = found.files
    return Usage.model_validate(
        {
            "tracesets": found.tracesets,
            "files": totals.files,
            "bytesStored": totals.bytes_stored,
            "bytesPending": totals.bytes_pending,
            "quotaBytes": found.quota_bytes,
        }
    )
