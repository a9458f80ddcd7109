"""gzip for the answers the service writes, when the client accepts it; never file bytes.

A traceset of thousands of files answers megabytes of JSON that shrink tenfold. The
signed-URL routes are left alone: their bytes go out exactly as stored, with their own
Content-Length, streamed, so a download's digest and resumption hold.

A client that does not accept gzip gets the answer as written, with only ``Vary`` added:
Starlette's middleware would still read every answer's headers to decide not to compress
it, 7 % of upload-url's time on the event loop.
"""

from __future__ import annotations

from typing import Final

from starlette.middleware.gzip import DEFAULT_EXCLUDED_CONTENT_TYPES, GZipMiddleware
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tracesets.api.blobs import BLOB_ROUTE

#: Smaller answers gain nothing from gzip (its header and trailer are 18 bytes).
MINIMUM_BYTES: Final = 1_024
#: zlib's default: most of level 9's gain for a fraction of its time.
LEVEL: Final = 6
#: What every answer to a client that does not accept gzip says: one that does may get
#: another (GZipMiddleware says it of the answers it compresses).
VARY: Final = (b"vary", b"Accept-Encoding")


def accepts_gzip(scope: Scope) -> bool:
    """Whether any of the request's Accept-Encoding headers names gzip."""
    return any(name == b"accept-encoding" and b"gzip" in value for name, value in scope["headers"])


def compressing(app: ASGIApp) -> GZipMiddleware:
    """``app`` with its answers compressed, for a request that accepts gzip."""
    return GZipMiddleware(
        app,
        minimum_size=MINIMUM_BYTES,
        compresslevel=LEVEL,
        exclude_content_types=(*DEFAULT_EXCLUDED_CONTENT_TYPES, "application/octet-stream"),
    )


def is_file_route(scope: Scope) -> bool:
    """The signed URLs' routes, whose bytes go out as stored: never compressed."""
    return str(scope.get("path", "")).startswith(BLOB_ROUTE)


class CompressAnswers:
    """GZipMiddleware for every route but the signed URLs' (and never a file's bytes)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.gzip = compressing(app)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or is_file_route(scope):
            await self.app(scope, receive, send)
        elif accepts_gzip(scope):
            await self.gzip(scope, receive, send)
        else:

            async def send_varying(message: Message) -> None:
                if message["type"] == "http.response.start":
                    message["headers"] = [*message.get("headers", ()), VARY]
                await send(message)

            await self.app(scope, receive, send_varying)
