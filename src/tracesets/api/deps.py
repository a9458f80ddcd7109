"""What every route needs: the service, the caller's workspace, the raw body, the base URL.

Authentication, scopes and rate limits are checked here, once, not in each route: a
route asks for ``ReadWorkspace``, ``WriteWorkspace`` or ``PromoteWorkspace`` and gets
the workspace of a token that may do that.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated

from fastapi import Depends, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from tracesets import tokens
from tracesets.problems import (
    Forbidden,
    PayloadTooLarge,
    Problem,
    TooManyRequests,
    Unauthorized,
)
from tracesets.ratelimit import RateLimiter, retry_after_seconds
from tracesets.service import TracesetService
from tracesets.settings import Settings

_bearer = HTTPBearer(
    auto_error=False,
    description="A token made by `tracesets token create`, with the scopes the route needs "
    "(read, write or promote).",
)


async def get_service(request: Request) -> TracesetService:
    service: TracesetService = request.app.state.service
    return service


Service = Annotated[TracesetService, Depends(get_service)]


async def current_caller(
    request: Request,
    service: Service,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> tokens.Caller:
    if credentials is None:
        raise Unauthorized.of(
            [Problem("Authorization", None, "Send a token as Authorization: Bearer <token>")]
        )
    token = credentials.credentials
    if service.db.is_sqlite:
        # A read of SQLite in WAL mode never waits for a writer and takes microseconds:
        # a trip to a worker thread would cost more than the query.
        caller = tokens.authenticate(service.db, token)
    else:
        caller = await run_in_threadpool(tokens.authenticate, service.db, token)
    if caller is None:
        raise Unauthorized.of(
            [
                Problem(
                    "Authorization", None, "The token is not known to this service or was revoked"
                )
            ]
        )
    limiter: RateLimiter = request.app.state.rate_limiter
    wait = limiter.take(caller.token_hash)
    if wait > 0:
        refusal = TooManyRequests.of(
            [
                Problem(
                    "Authorization",
                    None,
                    "This token sends requests faster than the service allows",
                )
            ]
        )
        refusal.retry_after = retry_after_seconds(wait)
        raise refusal
    return caller


#: The caller itself, for a route whose answer depends on its scopes.
Caller = Annotated[tokens.Caller, Depends(current_caller)]


def _scoped(scope: str) -> Callable[[tokens.Caller], Awaitable[str]]:
    async def workspace(caller: Annotated[tokens.Caller, Depends(current_caller)]) -> str:
        if scope not in caller.scopes:
            raise Forbidden.of(
                [Problem("Authorization", None, f"This token does not have the {scope} scope")]
            )
        return caller.workspace

    return workspace


ReadWorkspace = Annotated[str, Depends(_scoped("read"))]
WriteWorkspace = Annotated[str, Depends(_scoped("write"))]
PromoteWorkspace = Annotated[str, Depends(_scoped("promote"))]


def _too_large(limit: int) -> PayloadTooLarge:
    return PayloadTooLarge.of(
        [Problem("body", None, f"The request body must be at most {limit:,} bytes")]
    )


async def read_body(request: Request) -> bytes:
    """The body, refused with 413 as soon as it is known to be over the limit."""
    settings: Settings = request.app.state.settings
    limit = settings.max_body_bytes
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise _too_large(limit)
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise _too_large(limit)
        chunks.append(chunk)
    return b"".join(chunks)


Body = Annotated[bytes, Depends(read_body)]


async def base_url(request: Request) -> str:
    configured: str | None = request.app.state.settings.public_url
    return configured or str(request.base_url).rstrip("/")


BaseURL = Annotated[str, Depends(base_url)]
