"""What every route needs: the service, the caller's workspace, the raw body, the base URL."""

from __future__ import annotations

from typing import Annotated, Final

from fastapi import Depends, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from tracesets import tokens
from tracesets.problems import PayloadTooLarge, Problem, Unauthorized
from tracesets.service import TracesetService

MAX_BODY_BYTES: Final = 4 * 1024 * 1024

_bearer = HTTPBearer(auto_error=False, description="A token made by `tracesets token create`.")


async def get_service(request: Request) -> TracesetService:
    service: TracesetService = request.app.state.service
    return service


Service = Annotated[TracesetService, Depends(get_service)]


async def current_workspace(
    service: Service,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> str:
    if credentials is None:
        raise Unauthorized.of(
            [Problem("Authorization", None, "Send a token as Authorization: Bearer <token>")]
        )
    if service.db.is_sqlite:
        # A read of SQLite in WAL mode never waits for a writer and takes microseconds:
        # a trip to a worker thread would cost more than the query.
        workspace = tokens.workspace_of(service.db, credentials.credentials)
    else:
        workspace = await run_in_threadpool(
            tokens.workspace_of, service.db, credentials.credentials
        )
    if workspace is None:
        raise Unauthorized.of(
            [
                Problem(
                    "Authorization", None, "The token is not known to this service or was revoked"
                )
            ]
        )
    return workspace


Workspace = Annotated[str, Depends(current_workspace)]


def _too_large() -> PayloadTooLarge:
    return PayloadTooLarge.of(
        [Problem("body", None, f"The request body must be at most {MAX_BODY_BYTES:,} bytes")]
    )


async def read_body(request: Request) -> bytes:
    """The body, refused with 413 as soon as it is known to be over the limit."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        raise _too_large()
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise _too_large()
        chunks.append(chunk)
    return b"".join(chunks)


Body = Annotated[bytes, Depends(read_body)]


async def base_url(request: Request) -> str:
    configured: str | None = request.app.state.settings.public_url
    return configured or str(request.base_url).rstrip("/")


BaseURL = Annotated[str, Depends(base_url)]
