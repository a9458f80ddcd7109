"""HMAC-signed URLs for the uploads and downloads the service serves itself.

A signed URL carries its own authority (method, file and expiry, signed with the
service's secret) so a PUT or GET of file bytes needs no bearer token: that is what
lets a client hand the URL to a tool like curl. Every process that shares the secret
accepts the URLs any of them issued.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from typing import Literal

Method = Literal["PUT", "GET"]


class URLSigner:
    def __init__(self, secret: bytes) -> None:
        if len(secret) < 32:
            raise ValueError("the signing secret must be at least 32 bytes")
        self._secret = secret

    def signature(self, method: Method, resource: str, expires: int) -> str:
        message = f"{method}\n{resource}\n{expires}".encode()
        return hmac.new(self._secret, message, hashlib.sha256).hexdigest()

    def query(self, method: Method, resource: str, ttl_seconds: int) -> tuple[str, int]:
        """The query string (``expires=…&signature=…``) and the expiry, as a Unix time."""
        expires = int(time.time()) + ttl_seconds
        return f"expires={expires}&signature={self.signature(method, resource, expires)}", expires

    def verify(
        self, method: Method, resource: str, expires: str | None, signature: str | None
    ) -> str | None:
        """None when the URL is genuine and current, else why it is refused."""
        if expires is None or signature is None or not expires.isdigit():
            return "The URL is not signed: it needs its expires and signature parameters"
        expected = self.signature(method, resource, int(expires))
        if not hmac.compare_digest(expected, signature):
            return "The URL's signature does not match: it was altered or is for another file"
        if int(expires) < time.time():
            return "The URL has expired; request a new one"
        return None
