"""``tracesets usage``: what the token's workspace holds, and its quota."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tracesets.cli import options
from tracesets.cli.output import json_text, say, size

if TYPE_CHECKING:
    from tracesets.client.models import Usage


def usage(
    as_json: options.Json = False, url: options.Url = None, token: options.Token = None
) -> None:
    """Print the workspace's tracesets, files and bytes, and its quota: a table, or JSON."""
    with options.client(url, token) as client:
        found = client.usage()
    if as_json:
        say(json_text(found))
    else:
        _table(found)


def _bytes(count: int) -> str:
    exact = f"{count:,} bytes"
    return exact if count < 1000 else f"{size(count)} ({exact})"


def _table(found: Usage) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(box=None, show_header=False, pad_edge=False)
    table.add_column(no_wrap=True)
    table.add_column(no_wrap=True, justify="right")
    counts = found.tracesets
    for status, count in (
        ("pending", counts.pending),
        ("ready", counts.ready),
        ("promoted", counts.promoted),
    ):
        table.add_row(f"tracesets {status}", f"{count:,}")
    table.add_row("files", f"{found.files:,}")
    table.add_row("stored", _bytes(found.bytesStored))
    table.add_row("pending", _bytes(found.bytesPending))
    quota = found.quotaBytes
    if quota is None:
        table.add_row("quota", "none")
    else:
        held = found.bytesStored + found.bytesPending
        table.add_row("quota", _bytes(quota))
        table.add_row("left", _bytes(max(0, quota - held)))
    Console(highlight=False).print(table, markup=False)
