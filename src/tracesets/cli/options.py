"""Options every client command takes, and the client they make."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from tracesets.cli.output import fail_usage
from tracesets.client import Client

Url = Annotated[
    str | None,
    typer.Option(
        "--url",
        help="The service's base URL (default: TRACESETS_URL, else http://localhost:8000).",
        show_default=False,
    ),
]
Token = Annotated[
    str | None,
    typer.Option(
        "--token",
        help="Bearer token (default: TRACESETS_TOKEN, else SCALA_API_TOKEN).",
        show_default=False,
    ),
]
#: The files to send, as ``upload`` and ``add-files`` take them.
Paths = Annotated[
    list[Path],
    typer.Argument(
        metavar="PATH...",
        exists=True,
        help="Files, or folders standing for every file under them.",
        show_default=False,
    ),
]
Json = Annotated[bool, typer.Option("--json", help="Print JSON instead of text.")]


def check_token(token: str | None) -> None:
    """A usage error, said before any slower check (reading traces) can refuse first."""
    if token is not None and not token.strip():
        # An empty --token (an unset variable in a script) must not fall back to another one.
        fail_usage("--token is empty: pass a token, or leave --token out to use TRACESETS_TOKEN")


def client(url: str | None, token: str | None, *, concurrency: int = 8) -> Client:
    check_token(token)
    return Client(url, token, concurrency=concurrency)
