"""gzip for the answers the service writes, when the client accepts it; never file bytes.

A traceset of thousands of files answers megabytes of JSON that shrink tenfold. The
signed-URL routes are left alone: their bytes go out exactly as stored, with their own
Content-Length, streamed, so a download's digest and resumption hold.

A client that does not accept gzip gets the answer as written, with only ``Vary`` added:
Starlette's middleware would still read every answer's headers to decide not to compress
it, 7 % of upload-url's time on the event loop. Whether it accepts gzip is read from
Accept-Encoding as RFC 9110 §12.5.3 says (q-values, ``identity``, ``*``), not by finding
"gzip" in it (``gzip;q=0`` refuses gzip; Starlette's middleware would still compress).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum
from functools import lru_cache
from typing import Final

from starlette.middleware.gzip import DEFAULT_EXCLUDED_CONTENT_TYPES, GZipResponder
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tracesets.api.blobs import BLOB_ROUTE

#: Smaller answers gain nothing from gzip (its header and trailer are 18 bytes).
MINIMUM_BYTES: Final = 1_024
#: zlib's default: most of level 9's gain for a fraction of its time.
LEVEL: Final = 6
#: What every answer to a client that does not accept gzip says: one that does may get
#: another (GZipResponder says it of the answers it compresses).
VARY: Final = (b"vary", b"Accept-Encoding")
#: Answers never compressed: Starlette's list, and any file's bytes.
EXCLUDED: Final = (*DEFAULT_EXCLUDED_CONTENT_TYPES, "application/octet-stream")
#: RFC 9110's qvalue: 0 to 1 with at most three decimals.
_QVALUE: Final = re.compile(rb"0(\.[0-9]{0,3})?|1(\.0{0,3})?")


class Coding(Enum):
    """How to answer a request, by its Accept-Encoding."""

    #: As written (gzip refused, not named, or liked less than identity).
    IDENTITY = "identity"
    #: gzip when the answer is worth it (``MINIMUM_BYTES`` and more).
    GZIP = "gzip"
    #: gzip whatever its size: the client refused identity and accepts gzip.
    GZIP_ONLY = "gzip-only"


def accepted_coding(scope: Scope) -> Coding:
    """The coding the request's Accept-Encoding headers (all of them, joined) ask for."""
    values = [value for name, value in scope["headers"] if name == b"accept-encoding"]
    return _coding(b",".join(values)) if values else Coding.IDENTITY


@lru_cache(maxsize=256)
def _coding(header: bytes) -> Coding:
    """RFC 9110 §12.5.3: a coding not named takes ``*``'s q, else is refused (q 0), but
    identity is acceptable unless refused (``identity;q=0``, or ``*;q=0`` without
    identity). gzip goes out when its q is above 0 and not below one identity was given;
    when both are refused the answer goes as written all the same (the RFC's SHOULD)."""
    weights: dict[bytes, float] = {}
    for member in header.lower().split(b","):
        coding, *params = (part.strip() for part in member.split(b";"))
        weight = 1.0
        for param in params:
            key, _, value = param.partition(b"=")
            if key.strip() == b"q":
                value = value.strip()
                weight = float(value) if _QVALUE.fullmatch(value) else -1.0
        if coding and weight >= 0:  # a malformed q leaves its member out
            weights[b"gzip" if coding == b"x-gzip" else coding] = weight
    gzip = weights.get(b"gzip", weights.get(b"*", 0.0))
    identity = weights.get(b"identity", weights.get(b"*"))
    if gzip <= 0 or (identity is not None and identity > gzip):
        return Coding.IDENTITY
    return Coding.GZIP_ONLY if identity == 0 else Coding.GZIP


@dataclass(frozen=True, slots=True)
class Gzipped:
    """``app``'s answers gzipped from ``minimum`` bytes on: GZipMiddleware's responder,
    without the middleware's own test of Accept-Encoding (``accepted_coding`` decided).
    Each says it varies, a small one too: a client refusing identity gets it gzipped."""

    app: ASGIApp
    minimum: int

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def send_varying(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = message.get("headers", [])
                if not any(k == b"vary" and b"accept-encoding" in v.lower() for k, v in headers):
                    message["headers"] = [*headers, VARY]
            await send(message)

        responder = GZipResponder(
            self.app, self.minimum, compresslevel=LEVEL, exclude_content_types=EXCLUDED
        )
        await responder(scope, receive, send_varying)


@dataclass(frozen=True, slots=True)
class Codings:
    """One app for each coding: ``plain`` (which says it varies) and ``app`` gzipped."""

    plain: ASGIApp
    gzip: ASGIApp
    gzip_only: ASGIApp

    @classmethod
    def of(cls, app: ASGIApp, plain: ASGIApp) -> Codings:
        return cls(plain, Gzipped(app, MINIMUM_BYTES), Gzipped(app, 0))

    def serving(self, scope: Scope) -> ASGIApp:
        """The app for the request's Accept-Encoding."""
        coding = accepted_coding(scope)
        if coding is Coding.IDENTITY:
            return self.plain
        return self.gzip if coding is Coding.GZIP else self.gzip_only


def is_file_route(scope: Scope) -> bool:
    """The signed URLs' routes, whose bytes go out as stored: never compressed."""
    return str(scope.get("path", "")).startswith(BLOB_ROUTE)


class CompressAnswers:
    """gzip for every route but the signed URLs' (and never a file's bytes)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.codings = Codings.of(app, self._varying)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or is_file_route(scope):
            await self.app(scope, receive, send)
        else:
            await self.codings.serving(scope)(scope, receive, send)

    async def _varying(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def send_varying(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", ()), VARY]
            await send(message)

        await self.app(scope, receive, send_varying)
