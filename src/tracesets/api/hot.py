"""Each request of an upload's life after upload-url, as a plain Starlette endpoint.

The signed PUT, complete, GET of a traceset and promote are what every rank or job sends
once per traceset. FastAPI's request handling (solving the dependencies of each request,
validating parameters that are plain strings) cost about a fifth of their CPU under many
clients. These endpoints make the same checks, in the order FastAPI made them (its
dependencies are solved in parameter order: the token and its rate, the scope, the
traceset id, then the body), with the same functions; their routes' declarations in
``routes`` and ``blobs`` still describe them (``upload_url.HotRoute``).
"""

from __future__ import annotations

from typing import Final

from fastapi.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from tracesets.api import blobs, deps, render, routes
from tracesets.api.guards import UploadSlots
from tracesets.service.catalog import TracesetService


async def _traceset_of(request: Request, scope: str) -> tuple[TracesetService, str, str]:
    """The service, the caller's workspace for ``scope`` and the path's traceset id."""
    workspace = deps.workspace_of(await deps.authenticate(request), scope)
    traceset_id = await routes.checked_traceset_id(request.path_params["traceset_id"])
    service: TracesetService = request.app.state.service
    return service, workspace, traceset_id


async def get_traceset(request: Request) -> Response:
    service, workspace, traceset_id = await _traceset_of(request, "read")
    if service.reads_inline:
        traceset = service.read(workspace, traceset_id)
    else:
        traceset = await run_in_threadpool(service.read, workspace, traceset_id)
    return render.json_response(render.traceset(traceset))


async def complete_traceset(request: Request) -> Response:
    service, workspace, traceset_id = await _traceset_of(request, "write")
    traceset = await run_in_threadpool(service.complete, workspace, traceset_id)
    return render.json_response(render.traceset(traceset))


async def promote_traceset(request: Request) -> Response:
    service, workspace, traceset_id = await _traceset_of(request, "promote")
    body = await deps.read_body(request)
    traceset, warnings = await run_in_threadpool(service.promote, workspace, traceset_id, body)
    said, _ = render.within(warnings, render.INSPECTION_LIST_BYTES)
    return render.json_response({**render.traceset(traceset), "warnings": said})


async def upload_file(request: Request) -> Response:
    transfers = await blobs.get_transfers(request)
    index = await blobs.file_index(request.path_params["idx"])
    traceset_id, query = request.path_params["traceset_id"], request.query_params
    expires, signature = query.get("expires"), query.get("signature")
    transfers.verify("PUT", traceset_id, index, expires, signature)
    slots: UploadSlots = request.app.state.upload_slots
    async with slots.slot():
        await transfers.receive(
            traceset_id, index, request.stream(), expires=expires, signature=signature
        )
    return render.json_response({"received": True})


#: Each endpoint by the operation (FastAPI route name) it serves.
ENDPOINTS: Final = {
    "get_traceset": get_traceset,
    "complete_traceset": complete_traceset,
    "promote_traceset": promote_traceset,
    "upload_file": upload_file,
}
