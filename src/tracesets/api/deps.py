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
from fastapi.security.utils import get_authorization_scheme_param

from tracesets.api.observe import note
from tracesets.problems import (
    Forbidden,
    PayloadTooLarge,
    Problem,
    TooManyRequests,
    Unauthorized,
    UnsupportedMediaType,
)
from tracesets.ratelimit import RateLimiter, retry_after_seconds
from tracesets.service import tokens
from tracesets.service.catalog import TracesetService
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


def bearer_token(request: Request) -> str | None:
    """The request's bearer token, read as ``_bearer`` reads it, without the pydantic
    model it makes of it (a tenth of the token check's time)."""
    scheme, token = get_authorization_scheme_param(request.headers.get("authorization"))
    return token if scheme.lower() == "bearer" and token else None


async def authenticate(request: Request) -> tokens.Caller:
    """The caller of the request's bearer token, within its rate limit; 401 or 429 else."""
    token = bearer_token(request)
    if token is None:
        raise Unauthorized.of(
            [Problem("Authorization", None, "Send a token as Authorization: Bearer <token>")]
        )
    service: TracesetService = request.app.state.service
    if service.reads_inline:
        caller = service.authenticate(token)
    else:
        caller = await run_in_threadpool(service.authenticate, token)
    if caller is None:
        raise Unauthorized.of(
            [
                Problem(
                    "Authorization", None, "The token is not known to this service or was revoked"
                )
            ]
        )
    note("workspace", caller.workspace)
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


async def current_caller(
    request: Request,
    _credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> tokens.Caller:
    """``authenticate`` as a dependency; the bearer parameter puts the scheme in the description."""
    return await authenticate(request)


#: The caller itself, for a route whose answer depends on its scopes.
Caller = Annotated[tokens.Caller, Depends(current_caller)]


def workspace_of(caller: tokens.Caller, scope: str) -> str:
    """The caller's workspace, if its token has ``scope``; 403 else."""
    if scope not in caller.scopes:
        raise Forbidden.of(
            [Problem("Authorization", None, f"This token does not have the {scope} scope")]
        )
    return caller.workspace


def _scoped(scope: str) -> Callable[[tokens.Caller], Awaitable[str]]:
    async def workspace(caller: Annotated[tokens.Caller, Depends(current_caller)]) -> str:
        return workspace_of(caller, scope)

    return workspace


ReadWorkspace = Annotated[str, Depends(_scoped("read"))]
WriteWorkspace = Annotated[str, Depends(_scoped("write"))]
PromoteWorkspace = Annotated[str, Depends(_scoped("promote"))]


def _too_large(limit: int) -> PayloadTooLarge:
    return PayloadTooLarge.of(
        [Problem("body", None, f"The request body must be at most {limit:,} bytes")]
    )


def is_json_media_type(content_type: str | None) -> bool:
    """``application/json`` or a ``+json`` type (``application/merge-patch+json``), any parameters.

    Parameters such as ``charset`` are ignored: JSON is UTF-8 (RFC 8259) and the strict
    reader refuses anything else with its own 400.
    """
    media_type = (content_type or "").split(";", 1)[0].strip().lower()
    kind, _, subtype = media_type.partition("/")
    return kind == "application" and (subtype == "json" or subtype.endswith("+json"))


def _has_body(request: Request) -> bool:
    """Whether bytes follow the headers: a POST with none (promote's "no body") has no type."""
    length = request.headers.get("content-length")
    return (length is not None and length != "0") or "transfer-encoding" in request.headers


async def read_body(request: Request) -> bytes:
    """The JSON body: 415 unless it says it is JSON, 413 as soon as it is known to be too big.

    The type is checked before a byte is read, so a form or a text post (a browser's
    cross-site form, a mistaken curl ``-d``) is refused as what it is, not parsed as JSON.
    """
    content_type = request.headers.get("content-type")
    if not is_json_media_type(content_type) and (content_type is not None or _has_body(request)):
        raise UnsupportedMediaType.of(
            [
                Problem(
                    "Content-Type",
                    content_type,
                    "The request body must be JSON, sent with Content-Type: application/json; "
                    f"got {content_type or 'no Content-Type'}",
                )
            ]
        )
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
    """Where signed URLs point: ``TRACESETS_PUBLIC_URL``, else the address the service listens on.

    Never the request's ``Host``: anyone can send any Host, and the URLs built on it would
    send a client's bytes, or its download, wherever the sender chose. The listening
    address is that of the socket the request arrived on (with ``--host 127.0.0.1 --port
    8000``, http://127.0.0.1:8000), known in every worker process without configuration.
    ``serve`` speaks plain HTTP; behind TLS or a proxy, set ``TRACESETS_PUBLIC_URL``.
    """
    configured: str | None = request.app.state.settings.public_url
    return configured or listening_url(request.scope.get("server"))


def listening_url(server: tuple[str, int | None] | None) -> str:
    """``http://HOST:PORT`` of the socket a request arrived on (brackets around IPv6)."""
    if server is None or server[1] is None:  # a Unix socket, or no server at all
        return "http://localhost"
    host, port = server
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}"


BaseURL = Annotated[str, Depends(base_url)]
