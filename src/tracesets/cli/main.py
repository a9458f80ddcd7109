"""``tracesets``: upload, find, promote, download and delete tracesets; run the service.

Twine's habit: every refusal is one ``ClientError``, which ``main`` prints as one line
(then one line per problem: member, value, rule) and turns into exit code 1. Usage
errors exit 2, as click's own do.

A command's module is imported only when that command runs (or the command list is
asked for): ``tracesets inspect`` reads local files and never needs the client's HTTP
stack, which is half of the start-up of a command that imports all of them.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence
from typing import Final, NamedTuple

import typer

from tracesets.cli.output import REFUSED, error_lines, warn
from tracesets.client import ClientError


class Command(NamedTuple):
    module: str
    function: str
    #: Short helps fit the command list in 80 columns, which would otherwise cut them.
    short_help: str


COMMANDS: Final = {
    "upload": Command("upload", "upload", "Upload files or folders as one traceset."),
    "add-files": Command("add", "add_files", "Add files to a pending traceset."),
    "list": Command("commands", "list_", "List tracesets, newest first."),
    "show": Command("commands", "show", "Print a traceset, with its inspection."),
    "promote": Command("commands", "promote", "Promote a ready traceset."),
    "compare": Command("compare", "compare", "Compare a traceset with a baseline."),
    "download": Command("commands", "download", "Download a traceset's files."),
    "delete": Command("commands", "delete", "Delete tracesets and their files."),
    "usage": Command("usage", "usage", "Print the workspace's tracesets, bytes and quota."),
    "inspect": Command("inspect", "inspect", "Print what local traces say about their ranks."),
    "serve": Command("server", "serve", "Start the service."),
    "worker": Command("worker", "worker", "Inspect queued tracesets; no API."),
    "backup": Command("backups", "backup", "Back up the data folder while it serves."),
    "restore": Command("backups", "restore", "Make a data folder from a backup."),
}
TOKEN_COMMANDS: Final = {
    "create": Command("server", "token_create", "Print a new token for a workspace."),
    "revoke": Command("server", "token_revoke", "Revoke a token."),
    "list": Command("server", "token_list", "List tokens, never their values."),
}
TOKEN: Final = "token"


def _add(app: typer.Typer, name: str, command: Command) -> None:
    module = importlib.import_module(f"tracesets.cli.{command.module}")
    app.command(name, short_help=command.short_help)(getattr(module, command.function))


def command_line(args: Sequence[str] | None = None) -> typer.Typer:
    """The program, holding only the command ``args`` name when they name one (every
    command otherwise: the command list, a mistyped name). click then parses ``args``
    exactly as it would with every command there."""
    app = typer.Typer(
        name="tracesets",
        help="Keep the traces of distributed ML training runs as tracesets.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        # click's plain help wraps at word boundaries; rich's panels cut long words with "…".
        rich_markup_mode=None,
    )
    # A group even when it holds one command: typer would otherwise make that command
    # the whole program, taking its name for an argument.
    app.callback()(_program)
    asked = args[0] if args else None
    only = asked if asked in COMMANDS or asked == TOKEN else None
    for name, command in COMMANDS.items():
        if only in (None, name):
            _add(app, name, command)
    if only in (None, TOKEN):
        token_app = typer.Typer(
            help="Manage the bearer tokens of workspaces.",
            no_args_is_help=True,
            rich_markup_mode=None,
        )
        for name, command in TOKEN_COMMANDS.items():
            _add(token_app, name, command)
        app.add_typer(token_app, name=TOKEN)
    return app


def _program() -> None:
    pass


def main(app: typer.Typer | None = None) -> None:
    try:
        (app or command_line(sys.argv[1:]))()
    except ClientError as error:
        for line in error_lines(error):
            warn(line)
        sys.exit(REFUSED)
    except KeyboardInterrupt:
        sys.exit(130)
