"""``tracesets``: upload, find, promote, download and delete tracesets; run the service.

Twine's habit: every refusal is one ``ClientError``, which ``main`` prints as one line
(then one line per problem: member, value, rule) and turns into exit code 1. Usage
errors exit 2, as click's own do.
"""

from __future__ import annotations

import sys

import typer

from tracesets.cli import add, commands, inspect, server, upload, worker
from tracesets.cli.output import REFUSED, error_lines, warn
from tracesets.client import ClientError

app = typer.Typer(
    name="tracesets",
    help="Keep the traces of distributed ML training runs as tracesets.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    # click's plain help wraps at word boundaries; rich's panels cut long words with "…".
    rich_markup_mode=None,
)
token_app = typer.Typer(
    help="Manage the bearer tokens of workspaces.", no_args_is_help=True, rich_markup_mode=None
)

# Short helps fit the command list in 80 columns, which would otherwise cut them with "...".
app.command("upload", short_help="Upload files or folders as one traceset.")(upload.upload)
app.command("add-files", short_help="Add files to a pending traceset.")(add.add_files)
app.command("list", short_help="List tracesets, newest first.")(commands.list_)
app.command("show", short_help="Print a traceset, with its inspection.")(commands.show)
app.command("promote", short_help="Promote a ready traceset.")(commands.promote)
app.command("download", short_help="Download a traceset's files.")(commands.download)
app.command("delete", short_help="Delete tracesets and their files.")(commands.delete)
app.command("inspect", short_help="Print what local traces say about their ranks.")(inspect.inspect)
app.command("serve", short_help="Start the service.")(server.serve)
app.command("worker", short_help="Inspect queued tracesets; no HTTP.")(worker.worker)
app.add_typer(token_app, name="token")
token_app.command("create", short_help="Print a new token for a workspace.")(server.token_create)
token_app.command("revoke", short_help="Revoke a token.")(server.token_revoke)
token_app.command("list", short_help="List tokens, never their values.")(server.token_list)


def main() -> None:
    try:
        app()
    except ClientError as error:
        for line in error_lines(error):
            warn(line)
        sys.exit(REFUSED)
    except KeyboardInterrupt:
        sys.exit(130)
