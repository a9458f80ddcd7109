"""HMAC-signed URLs for the uploads and downloads the service serves itself.

A signed URL carries its own authority (method, file and expiry, signed with the
service's secret) so a PUT or GET of file bytes needs no bearer token: that is what
lets a client hand the URL to a tool like curl. Every process that shares the secret
accepts the URLs any of them issued.

Only the exact text the service signed is accepted. Its parameters are parsed strictly
(ASCII digits of bounded length, lowercase hex of the digest's length) before any number
is made of them, so no spelling reaches ``int()`` or ``compare_digest`` that either
refuses, and no other spelling of the same number (``007``, ``+7``) passes as the one
that was signed.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import time
from typing import Final, Literal

Method = Literal["PUT", "GET"]

# Canonical decimal: "0" or no leading zero; ASCII only ([0-9] is not \d, which takes "²").
_EXPIRES: Final = re.compile(r"0|[1-9][0-9]{0,15}")  # Unix times to the year 300 million
_SIGNATURE: Final = re.compile(r"[0-9a-f]{64}")
_INDEX: Final = re.compile(r"0|[1-9][0-9]{0,8}")


def parse_index(text: str) -> int | None:
    """The file index a signed URL's path names, or None unless written as it is signed."""
    return int(text) if _INDEX.fullmatch(text) else None


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
        if expires is None or signature is None:
            return "The URL is not signed: it needs its expires and signature parameters"
        if not _EXPIRES.fullmatch(expires):
            return "The URL's expires must be a Unix time in plain decimal digits, as signed"
        if not _SIGNATURE.fullmatch(signature):
            return "The URL's signature must be 64 lowercase hexadecimal digits, as signed"
        expected = self.signature(method, resource, int(expires))
        if not hmac.compare_digest(expected, signature):
            return "The URL's signature does not match: it was altered or is for another file"
        if int(expires) < time.time():
            return "The URL has expired; request a new one"
        return None
