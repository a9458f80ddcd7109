"""upload-url, the hottest route, as a plain Starlette endpoint behind its FastAPI declaration.

FastAPI's request handling (solving each request's dependencies, the hop to a worker
thread and back) cost about two thirds of this route's time. This endpoint makes the
same checks, in the order FastAPI made them, with the same functions (``deps``): the
token and its rate limit (401, 429), the scope (403), the body's type and size (415,
413), the Idempotency-Key header (400, by its declared constraints), then the service.
With local files, the checks and the service's own run on the event loop and only the
commit is awaited (``create_upload_on_loop``): no worker thread per request.

The description is still FastAPI's, generated from the declaration in ``routes`` (its
path, methods, parameters and answers); ``HotRoute`` takes its path and methods from
that declaration and is matched before it. Errors go to the app's handlers, as any
route's do.
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

from tracesets.api import deps, hot, render, routes
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


#: Each hot endpoint by the operation (FastAPI route name) it serves.
ENDPOINTS: Final = {"request_upload_urls": request_upload_urls, **hot.ENDPOINTS}


def serve_hot_routes(routes: list[BaseRoute], *declared: APIRouter) -> None:
    """Serve each hot operation of ``declared`` with its endpoint, ahead of the declaration.

    The declaration stays in its router, where FastAPI describes it; a request matches
    the hot route first, so the declaration itself is never called.
    """
    for router in declared:
        for route in router.routes:
            if isinstance(route, APIRoute) and route.name in ENDPOINTS:
                routes.insert(0, HotRoute(route, ENDPOINTS[route.name]))
