"""``tracesets``: upload, find, promote, download and delete tracesets; run the service.

Twine's habit: every refusal is one ``ClientError``, which ``main`` prints as one line
(then one line per problem: member, value, rule) and turns into exit code 1. Usage
errors exit 2, as click's own do.
"""

from __future__ import annotations

import sys

import typer

from tracesets.cli import add, inspect, server, tracesets, upload
from tracesets.cli.output import REFUSED, error_lines, warn
from tracesets.client import ClientError

app = typer.Typer(
    name="tracesets",
    help="Keep the traces of distributed ML training runs as tracesets.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
token_app = typer.Typer(help="Manage the bearer tokens of workspaces.", no_args_is_help=True)

app.command("upload")(upload.upload)
app.command("add-files")(add.add_files)
app.command("list")(tracesets.list_)
app.command("show")(tracesets.show)
app.command("promote")(tracesets.promote)
app.command("download")(tracesets.download)
app.command("delete")(tracesets.delete)
app.command("inspect")(inspect.inspect)
app.command("serve")(server.serve)
app.add_typer(token_app, name="token")
token_app.command("create")(server.token_create)
token_app.command("revoke")(server.token_revoke)
token_app.command("list")(server.token_list)


def main() -> None:
    try:
        app()
    except ClientError as error:
        for line in error_lines(error):
            warn(line)
        sys.exit(REFUSED)
    except KeyboardInterrupt:
        sys.exit(130)
