"""The clients' transports: each made only when a URL of its scheme is first asked for.

httpx's own transport builds a verifying TLS context (loading certifi's CA bundle, 35 to 45 ms
of CPU) when the client is made, whatever the scheme. A service on plain http:// with its
files on the local store never needs it; one whose uploads go to https:// S3 URLs pays
for it once, at the first such request. The plain transport loads httpcore (15 to 40 ms),
which the client's own plain requests (``plainhttp``) do without: it too is made when
httpx is first asked for an http:// URL (a request with a query, say).
"""

from __future__ import annotations

import ssl
import threading

import httpx


def _trusts_nothing() -> ssl.SSLContext:
    """A TLS context with no CA loaded: it can verify no server, so it can never be used
    by mistake to trust one. The plain transport is only asked for http:// URLs."""
    return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)


class SchemeTransport(httpx.BaseTransport):
    """http:// through a transport without a CA bundle; https:// through httpx's default
    transport (verifying, honouring ``SSL_CERT_FILE``), made on first use."""

    def __init__(self, limits: httpx.Limits) -> None:
        self._limits = limits
        self._plain: httpx.HTTPTransport | None = None
        self._tls: httpx.HTTPTransport | None = None
        self._lock = threading.Lock()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.scheme == "http":
            return self._insecure().handle_request(request)
        return self._secure().handle_request(request)

    def _insecure(self) -> httpx.HTTPTransport:
        with self._lock:
            if self._plain is None:
                self._plain = httpx.HTTPTransport(verify=_trusts_nothing(), limits=self._limits)
            return self._plain

    def _secure(self) -> httpx.HTTPTransport:
        with self._lock:
            if self._tls is None:
                self._tls = httpx.HTTPTransport(limits=self._limits)
            return self._tls

    def close(self) -> None:
        with self._lock:
            for transport in (self._plain, self._tls):
                if transport is not None:
                    transport.close()


class AsyncSchemeTransport(httpx.AsyncBaseTransport):
    """``SchemeTransport`` for the asyncio client: its transports made on first use too.
    One event loop makes them, and nothing awaits between looking and making: no lock."""

    def __init__(self, limits: httpx.Limits) -> None:
        self._limits = limits
        self._plain: httpx.AsyncHTTPTransport | None = None
        self._tls: httpx.AsyncHTTPTransport | None = None

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.scheme == "http":
            if self._plain is None:
                self._plain = httpx.AsyncHTTPTransport(
                    verify=_trusts_nothing(), limits=self._limits
                )
            return await self._plain.handle_async_request(request)
        if self._tls is None:
            self._tls = httpx.AsyncHTTPTransport(limits=self._limits)
        return await self._tls.handle_async_request(request)

    async def aclose(self) -> None:
        for transport in (self._plain, self._tls):
            if transport is not None:
                await transport.aclose()
