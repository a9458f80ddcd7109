"""Where the service is and which token opens it: arguments first, then the environment."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Final

from tracesets.client.errors import ClientError

URL_VARIABLE: Final = "TRACESETS_URL"
#: ``SCALA_API_TOKEN`` is the name the source document's curl example uses.
TOKEN_VARIABLES: Final = ("TRACESETS_TOKEN", "SCALA_API_TOKEN")
DEFAULT_URL: Final = "http://localhost:8000"
API_PREFIX: Final = "/api/v1"


def base_url(url: str | None, env: Mapping[str, str] | None = None) -> str:
    """The service's base URL, without a trailing ``/`` or ``/api/v1``."""
    env = os.environ if env is None else env
    chosen = (url or env.get(URL_VARIABLE) or DEFAULT_URL).strip().rstrip("/")
    if chosen.endswith(API_PREFIX):
        chosen = chosen[: -len(API_PREFIX)]
    if not chosen.startswith(("http://", "https://")):
        raise ClientError(
            f"The service URL must start with http:// or https://; got {chosen!r}", sent=False
        )
    return chosen


def token(value: str | None, env: Mapping[str, str] | None = None) -> str | None:
    env = os.environ if env is None else env
    if value:
        return value
    for name in TOKEN_VARIABLES:
        if env.get(name):
            return env[name]
    return None


def auth_headers(bearer: str | None) -> dict[str, str]:
    if bearer is None:
        raise ClientError(
            "No token: set TRACESETS_TOKEN (or SCALA_API_TOKEN), or pass one "
            "(token=… in Python, --token on the command line)",
            sent=False,
        )
    return {"Authorization": f"Bearer {bearer}"}
