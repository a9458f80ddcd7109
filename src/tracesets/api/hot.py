"""The requests every rank or job sends once per traceset, as plain Starlette endpoints.

upload-url, the signed PUT, complete, GET of a traceset and promote. FastAPI's request
handling (solving each request's dependencies, validating parameters that are plain
strings, the hop to a worker thread and back) cost about two thirds of upload-url's time
and a fifth of the others' under many clients. These endpoints make the same checks, in
the order FastAPI made them (its dependencies are solved in parameter order: the token
and its rate limit, 401 and 429; the scope, 403; the traceset id; then the body's type
and size, 415 and 413, and headers by their declared constraints), with the same
functions (``deps``). With local files, upload-url's checks and the service's own run on
the event loop and only the commit is awaited (``create_upload_on_loop``), as complete's
do for a traceset of a few files on SQLite (``complete_on_loop``) and promote's always:
a worker thread waiting for its turn to write is one the pool lacks under many clients.

The description is still FastAPI's, generated from each operation's declaration in
``routes`` and ``blobs`` (its path, methods, parameters and answers): ``HotRoute`` takes
its path and methods from that declaration and is matched before it, so the declaration
itself is never called. Errors go to the app's handlers, as any route's do.
"""

from __future__ import annotations

from typing import Annotated, Any, Final

from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute, APIRouter
from pydantic import TypeAdapter, ValidationError
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from tracesets.api import blobs, deps, render, routes
from tracesets.api.guards import UploadSlots
from tracesets.service.catalog import TracesetService

#: The header as FastAPI names it in a validation error's location.
_KEY_HEADER: Final = "idempotency-key"
#: The declared header's constraints (``routes.IDEMPOTENCY_KEY``), for a value sent.
_KEY: Final = TypeAdapter(Annotated[str, routes.IDEMPOTENCY_KEY])


class HotRoute(Route):
    """A plain route serving the operation ``documented`` describes (its path and methods)."""

    def __init__(self, documented: APIRoute, endpoint: Any) -> None:
        super().__init__(documented.path, endpoint, methods=sorted(documented.methods or ()))
        # Starlette adds HEAD to a GET; the declaration (and so a 405's Allow) has none.
        self.methods = set(documented.methods or ())
        self.documented = documented


def _idempotency_key(request: Request) -> str | None:
    value = request.headers.get(_KEY_HEADER)
    if value is None:
        return None
    try:
        key: str = _KEY.validate_python(value)
    except ValidationError as exc:
        raise RequestValidationError(
            [{**error, "loc": ("header", _KEY_HEADER)} for error in exc.errors()]
        ) from None
    return key


async def request_upload_urls(request: Request) -> Response:
    workspace = deps.workspace_of(await deps.authenticate(request), "write")
    body = await deps.read_body(request)
    idempotency_key = _idempotency_key(request)
    base = await deps.base_url(request)
    service: TracesetService = request.app.state.service
    if request.app.state.transfers is not None and idempotency_key is None:
        traceset, uploads = await service.create_upload_on_loop(workspace, body, base)
    else:  # S3 may start multipart uploads; a key may find an earlier answer to resume
        traceset, uploads = await run_in_threadpool(
            service.create_upload, workspace, body, base, idempotency_key
        )
    return render.json_response(render.upload_targets(traceset.id, uploads), 201)


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
    if request.app.state.transfers is not None and service.reads_inline:
        traceset = await service.complete_on_loop(workspace, traceset_id)
    else:  # S3 checks each file with a request; PostgreSQL's reads are round trips
        traceset = await run_in_threadpool(service.complete, workspace, traceset_id)
    return render.json_response(render.traceset(traceset))


async def promote_traceset(request: Request) -> Response:
    service, workspace, traceset_id = await _traceset_of(request, "promote")
    body = await deps.read_body(request)
    traceset, warnings = await service.promote(workspace, traceset_id, body)
    said, _ = render.within(warnings, render.INSPECTION_LIST_BYTES)
    return render.json_response({**render.traceset(traceset), "warnings": said})


async def upload_file(request: Request) -> Response:
    transfers = await blobs.get_transfers(request)
    index = await blobs.file_index(request.path_params["idx"])
    traceset_id, query = request.path_params["traceset_id"], request.query_params
    expires, signature = query.get("expires"), query.get("signature")
    signed = transfers.verify("PUT", traceset_id, index, expires, signature)
    slots: UploadSlots = request.app.state.upload_slots
    async with slots.slot(signed.traceset_id, signed.idx):
        await transfers.receive(signed, request.stream())
    return render.json_response({"received": True})


#: Each endpoint by the operation (FastAPI route name) it serves.
ENDPOINTS: Final = {
    "request_upload_urls": request_upload_urls,
    "get_traceset": get_traceset,
    "complete_traceset": complete_traceset,
    "promote_traceset": promote_traceset,
    "upload_file": upload_file,
}


def serve_hot_routes(routes: list[BaseRoute], *declared: APIRouter) -> None:
    """Serve each hot operation of ``declared`` with its endpoint, ahead of the declaration.

    The declaration stays in its router, where FastAPI describes it; a request matches
    the hot route first, so the declaration itself is never called.
    """
    for router in declared:
        for route in router.routes:
            if isinstance(route, APIRoute) and route.name in ENDPOINTS:
                routes.insert(0, HotRoute(route, ENDPOINTS[route.name]))
