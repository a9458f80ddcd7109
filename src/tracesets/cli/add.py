"""``tracesets add-files ID PATH...``: more files into a pending traceset."""

from __future__ import annotations

from typing import Annotated

import typer

from tracesets.cli import options
from tracesets.cli.output import say
from tracesets.cli.upload import summary
from tracesets.client.files import collect


def add_files(
    traceset_id: Annotated[
        str, typer.Argument(help="A pending traceset's id.", show_default=False)
    ],
    paths: options.Paths,
    supporting: options.Supporting = None,
    complete: Annotated[
        bool, typer.Option("--complete", help="Then complete the traceset.")
    ] = False,
    url: options.Url = None,
    token: options.Token = None,
) -> None:
    """Add files to a pending traceset and send them; the same files again send what is left."""
    files = collect(paths, supporting or ())
    with options.client(url, token) as client:
        client.add_local_files(traceset_id, files)
        traceset = client.complete(traceset_id) if complete else client.get_traceset(traceset_id)
    say(f"added {len(files)} file{'' if len(files) == 1 else 's'}")
    say(summary(traceset))
