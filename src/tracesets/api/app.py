"""The application: settings in, a FastAPI app out, every error rendered in one place."""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from datetime import timedelta
from typing import Any, Final

from fastapi import FastAPI, Request, Response
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from fastapi.telemetry import TelemetryConfig
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp

from tracesets import web
from tracesets.api import (
    access,
    blobs,
    compare_routes,
    counting,
    front,
    health,
    hot,
    metrics,
    observe,
    openapi,
    render,
    routes,
    usage,
)
from tracesets.api.compression import CompressAnswers
from tracesets.api.connections import busy_app
from tracesets.api.guards import (
    OUT_OF_DESCRIPTORS,
    UPLOAD_RETRY_AFTER,
    IdleBodyTimeout,
    UploadSlots,
)
from tracesets.api.methods import allowed_methods, own_concrete_paths
from tracesets.db.engine import Database
from tracesets.problems import (
    InvalidRequest,
    NotFound,
    Problem,
    RequestTimeout,
    ServiceUnavailable,
    TooManyRequests,
    TracesetsError,
    Unauthorized,
)
from tracesets.ratelimit import RateLimiter
from tracesets.service import tokens
from tracesets.service.catalog import TracesetService
from tracesets.service.core import Limits
from tracesets.service.inspections import InspectionQueue
from tracesets.service.regression import thresholds
from tracesets.service.stores import open_store
from tracesets.service.transfers import LocalTransfers
from tracesets.settings import DEFAULT_WORKSPACE, Settings
from tracesets.storage.local import LocalBlobStore
from tracesets.version import __version__

log = logging.getLogger("tracesets")


def build_service(settings: Settings) -> tuple[TracesetService, LocalTransfers | None]:
    """Open the database (migrated) and the file store the settings name.

    With local files, also the transfers that serve their signed URLs.
    """
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    db = Database(settings.database_url)
    db.migrate()
    if settings.bootstrap_token is not None:
        tokens.ensure(db, settings.bootstrap_token, workspace=DEFAULT_WORKSPACE, name="bootstrap")
    limits = Limits(
        max_files=settings.max_files,
        max_metadata_bytes=settings.max_metadata_bytes,
        quota_bytes=settings.quota_bytes,
    )
    store = open_store(settings, url_path=blobs.BLOB_ROUTE)
    if not isinstance(store, LocalBlobStore):
        return TracesetService(db, store, limits), None
    return TracesetService(db, store, limits), LocalTransfers(db, store, store.signer)


async def _sweep_forever(service: TracesetService, pending_ttl: int) -> None:
    """Abort abandoned uploads now and then; every process may, deletes are idempotent."""
    interval = max(1.0, min(3600.0, pending_ttl / 4))
    while True:
        try:
            await run_in_threadpool(service.sweep_pending, timedelta(seconds=pending_ttl))
        except Exception:  # a failed sweep is retried at the next interval
            log.exception("sweeping abandoned uploads failed")
        await asyncio.sleep(interval)


async def _sweep_orphans_forever(service: TracesetService, pending_ttl: int) -> None:
    """A bounded pass of the sweep of stored objects without rows (``service.orphans``)
    at the pending sweep's interval, the first one interval after start: a process that
    starts (or restarts in a loop) lists no bucket before it serves."""
    interval = max(1.0, min(3600.0, pending_ttl / 4))
    while True:
        await asyncio.sleep(interval)
        try:
            await run_in_threadpool(service.orphans.run)
        except Exception:  # a failed pass is tried again at the next interval
            log.exception("sweeping stored objects without rows failed")


async def _sweep_temporary_files(store: LocalBlobStore, idle_timeout: int) -> None:
    """Remove what uploads that died (a crash, a kill) left in the temporary folder.

    A file is old enough once no body could still be arriving into it (twice the body
    idle timeout), and dead once no process holds its lock (``LocalBlobStore.sweep_tmp``).
    """
    interval = max(1.0, min(60.0, idle_timeout / 2))
    while True:
        try:
            await run_in_threadpool(store.sweep_tmp, time.time() - 2 * idle_timeout)
        except Exception:  # a failed sweep is retried at the next interval
            log.exception("sweeping temporary files failed")
        await asyncio.sleep(interval)


#: The service's own wording for what FastAPI checks of a path, query or header, by
#: pydantic's error type; ``{m}`` is the member, the rest comes from the error's context.
_WORDING: Final = {
    "missing": "{m} is required",
    "int_parsing": "{m} must be a whole number",
    "int_type": "{m} must be a whole number",
    "int_from_float": "{m} must be a whole number",
    "bool_parsing": "{m} must be true or false",
    "greater_than_equal": "{m} must be at least {ge:,}",
    "less_than_equal": "{m} must be at most {le:,}",
    "enum": "{m} must be one of {expected}",
    "literal_error": "{m} must be one of {expected}",
    "string_too_short": "{m} must be at least {min_length:,} characters long",
    "string_too_long": "{m} must be at most {max_length:,} characters long",
    "string_pattern_mismatch": "{m} holds a character it may not hold",
}


def _message(member: str, error: Mapping[str, Any]) -> str:
    wording = _WORDING.get(str(error.get("type")))
    if wording is not None:
        try:
            return wording.format(m=member, **error.get("ctx", {}))
        except (KeyError, ValueError):
            pass
    return f"{member} is not valid here"


def _validation_problems(exc: RequestValidationError) -> list[Problem]:
    problems = []
    for error in exc.errors():
        where = [
            str(part)
            for part in error.get("loc", ())
            if part not in ("query", "path", "body", "header")
        ]
        member = ".".join(where)
        problems.append(Problem(member, error.get("input"), _message(member, error)))
    return problems or [Problem("", None, "The request is invalid")]


def _install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(TracesetsError)
    async def on_tracesets_error(_: Request, exc: TracesetsError) -> Response:
        headers: dict[str, str] | None = None
        if isinstance(exc, Unauthorized):
            headers = {"WWW-Authenticate": "Bearer"}
        elif isinstance(exc, TooManyRequests | ServiceUnavailable):
            headers = {"Retry-After": str(exc.retry_after)}
        elif isinstance(exc, RequestTimeout):  # the rest of the body is not worth reading
            headers = {"Connection": "close"}
        return render.problem_response(exc, headers)

    @app.exception_handler(OSError)
    async def on_os_error(request: Request, exc: OSError) -> Response:
        if exc.errno not in OUT_OF_DESCRIPTORS:
            raise exc
        log.warning("out of file descriptors answering %s %s", request.method, request.url.path)
        refusal = ServiceUnavailable.busy("The service has too many files open", UPLOAD_RETRY_AFTER)
        return await on_tracesets_error(request, refusal)

    @app.exception_handler(RequestValidationError)
    async def on_validation_error(_: Request, exc: RequestValidationError) -> Response:
        return render.problem_response(InvalidRequest.of(_validation_problems(exc)))

    @app.exception_handler(HTTPException)
    async def on_http_error(request: Request, exc: HTTPException) -> Response:
        if exc.status_code == 404:
            return render.problem_response(
                NotFound.of([Problem("path", request.url.path, "No such route")])
            )
        detail = str(exc.detail)
        slug = detail.lower().replace(" ", "-")
        headers = dict(exc.headers or {})
        if exc.status_code == 405:  # Starlette names only the first matching route's methods
            headers["Allow"] = ", ".join(allowed_methods(request.app.router.routes, request.scope))
        return render.problem(exc.status_code, slug, detail, detail, headers=headers)

    @app.exception_handler(ClientDisconnect)
    async def on_disconnect(_: Request, __: ClientDisconnect) -> Response:
        return Response(status_code=400)


def telemetry(environ: Mapping[str, str]) -> TelemetryConfig:
    """FastAPI's OpenTelemetry, on when the environment configures OpenTelemetry.

    Left on, FastAPI asks OpenTelemetry's global providers on every request whether one
    is configured, each reading the environment: 3 % of upload-url's time on the event
    loop. A process meant to report is started so (``opentelemetry-instrument`` and the
    ``OTEL_`` variables, or FastAPI's own switch); one that is not pays nothing.
    """
    on = any(name.startswith("OTEL_") for name in environ)
    on = on or environ.get("FASTAPI_OTEL_AUTO_CONFIGURE", "").lower() == "true"
    return {"tracing": on, "metrics": on, "logs": on}


def _build_stack(app: FastAPI, settings: Settings, front_in: bool) -> None:
    """Have the app's stack, once built, pass the hot routes' requests to a ``HotFront``
    (``front_in``) and every request through an ``Observer`` outside it all."""
    build = app.build_middleware_stack
    reports: list[observe.Report] = [counting.record]
    if settings.log_format == "json":
        reports.append(observe.log_access)

    def build_observed() -> ASGIApp:
        stack = build()
        if front_in:
            front.install(
                stack,
                app.router,
                app.exception_handlers,  # type: ignore[arg-type]
                settings.body_idle_timeout,
                settings.min_body_rate,
            )
        return observe.Observer(stack, reports, busy_app)

    app.build_middleware_stack = build_observed  # type: ignore[method-assign]


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or Settings.from_env()
    observed = telemetry(os.environ)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        service, transfers = await run_in_threadpool(build_service, settings)
        metrics.count_process()
        app.state.service, app.state.transfers = service, transfers
        background = [
            asyncio.create_task(_sweep_forever(service, settings.pending_ttl)),
            asyncio.create_task(_sweep_orphans_forever(service, settings.pending_ttl)),
        ]
        inspections: InspectionQueue | None = None
        if settings.inspect_in_service:
            queue = inspections = InspectionQueue(
                service.db,
                service.store,
                lease=timedelta(seconds=settings.inspection_lease),
                thresholds=thresholds(settings),
            )
            loop = asyncio.get_running_loop()

            def wake_inspections() -> None:  # called from worker threads
                loop.call_soon_threadsafe(queue.wake.set)

            service.on_inspection_queued = wake_inspections
            background.append(asyncio.create_task(inspections.run_forever()))
        if transfers is not None:
            background.append(
                asyncio.create_task(
                    _sweep_temporary_files(transfers.store, settings.body_idle_timeout)
                )
            )
        try:
            yield
        finally:
            if inspections is not None:
                inspections.stop()  # the file being read is given back, not left to lapse
            for task in background:
                task.cancel()
            service.db.dispose()
            metrics.forget_process()

    app = FastAPI(
        title="Tracesets",
        version=__version__,
        summary="Keep the traces of distributed ML training runs, with trustworthy workload metadata.",
        lifespan=lifespan,
        openapi_url="/openapi.json",
        docs_url=None,  # /docs is served by tracesets.web, from files of its own
        redoc_url=None,
        generate_unique_id_function=lambda route: route.name,
        telemetry=observed,
    )
    app.state.settings = settings
    app.state.rate_limiter = RateLimiter(settings.rate_limit, settings.rate_burst)
    app.state.upload_slots = UploadSlots(settings.max_concurrent_uploads, settings.upload_wait)
    app.add_middleware(
        IdleBodyTimeout, timeout=settings.body_idle_timeout, min_rate=settings.min_body_rate
    )
    app.include_router(health.router)
    app.include_router(metrics.router)
    app.include_router(access.router)
    app.include_router(usage.router)
    app.include_router(routes.router)
    app.include_router(compare_routes.router)
    app.include_router(blobs.router)
    app.include_router(web.router)
    hot.serve_hot_routes(app.router.routes, routes.router, blobs.router)
    own_concrete_paths(app.router.routes)
    _install_error_handlers(app)
    app.add_middleware(CompressAnswers)
    _build_stack(app, settings, front_in=not observed["tracing"])
    app.openapi = lambda: openapi.build(app)  # type: ignore[method-assign]
    return app
