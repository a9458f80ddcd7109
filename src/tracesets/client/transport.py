"""The blocking client's transport: TLS set up only when an https:// URL is first asked for.

httpx's own transport builds a verifying TLS context (loading certifi's CA bundle, 35 to 45 ms
of CPU) when the client is made, whatever the scheme. A service on plain http:// with its
files on the local store never needs it; one whose uploads go to https:// S3 URLs pays
for it once, at the first such request.
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
        self._plain = httpx.HTTPTransport(verify=_trusts_nothing(), limits=limits)
        self._tls: httpx.HTTPTransport | None = None
        self._lock = threading.Lock()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.scheme == "http":
            return self._plain.handle_request(request)
        return self._secure().handle_request(request)

    def _secure(self) -> httpx.HTTPTransport:
        with self._lock:
            if self._tls is None:
                self._tls = httpx.HTTPTransport(limits=self._limits)
            return self._tls

    def close(self) -> None:
        self._plain.close()
        with self._lock:
            if self._tls is not None:
                self._tls.close()
