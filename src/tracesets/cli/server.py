"""``tracesets serve`` and ``tracesets token …``: run the service, mint and revoke its tokens.

The database and the web server are imported when these commands run, so the client
commands start without them.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from tracesets.cli.output import fail_usage
from tracesets.settings import DEFAULT_WORKSPACE, Settings, SettingsError

if TYPE_CHECKING:
    from tracesets.db.engine import Database

DataDir = Annotated[
    Path | None,
    typer.Option(
        "--data-dir", help="Data folder (default: TRACESETS_DATA_DIR or ~/.local/share/tracesets)."
    ),
]


def _settings(data_dir: Path | None) -> Settings:
    try:
        return Settings.from_env(data_dir=data_dir)
    except SettingsError as exc:
        fail_usage(str(exc))


def _database(settings: Settings) -> Database:
    from tracesets.db.engine import Database

    settings.data_dir.mkdir(parents=True, exist_ok=True)
    db = Database(settings.database_url)
    db.migrate()
    return db


def command_hint(path: str | None) -> list[str]:
    """Where ``tracesets`` is, when a new shell (with ``path`` as PATH) would not find it:
    ``make serve`` runs it from the project's .venv, which no shell has on its PATH."""
    folder = Path(sys.executable).parent
    command = folder / "tracesets"
    found = shutil.which("tracesets", path=path)
    if found is not None and Path(found).resolve() == command.resolve():
        return []
    return [
        f"The tracesets command is {command}; in a new shell put it on PATH first:",
        f"  export PATH={folder}:$PATH   (or: . {folder / 'activate'})",
    ]


def token_hint(settings: Settings) -> str:
    """The command that makes a token this very service accepts: without ``--data-dir``
    it would go to the default data folder's database, and the service would refuse it.
    The folder is absolute so that the command works from any directory."""
    folder = shlex.quote(str(settings.data_dir.absolute()))
    hint = f"  tracesets token create --workspace {DEFAULT_WORKSPACE} --data-dir {folder}"
    if settings.database_url != Settings.from_env({}, data_dir=settings.data_dir).database_url:
        hint += "   (with this service's DATABASE_URL set)"
    return hint


def _banner(
    settings: Settings, host: str, port: int, token: str | None, path: str | None = None
) -> str:
    shown = "localhost" if host in ("0.0.0.0", "::", "127.0.0.1") else host
    url = settings.public_url or f"http://{shown}:{port}"
    lines = [f"Tracesets on {url}  (data: {settings.data_dir})"]
    if token is not None:
        lines += [
            f"Token (shown once, keep it): {token}",
            f"  export TRACESETS_URL={url} TRACESETS_TOKEN={token}",
        ]
    else:
        lines += ["Token: a bootstrap or earlier token; make another with", token_hint(settings)]
    if settings.public_url is None and host in ("0.0.0.0", "::"):
        lines += [
            "Signed URLs use the address each request arrived on; if clients reach this",
            "  service by another name (a proxy, a container's port), set TRACESETS_PUBLIC_URL",
        ]
    lines += command_hint(path)
    lines += [
        f"Open {url} in a browser and sign in with the token, or try it:",
        f'  curl -s -H "Authorization: Bearer {token or "$TRACESETS_TOKEN"}" {url}/api/v1/tracesets',
    ]
    return "\n".join(lines)


def serve(
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8000,
    data_dir: DataDir = None,
    workers: Annotated[
        int, typer.Option(min=1, help="Service processes sharing the database.")
    ] = 1,
) -> None:
    """Start the service (SQLite and a local folder unless DATABASE_URL says otherwise)."""
    from tracesets.api.connections import connection_budget, raise_descriptor_limit
    from tracesets.api.serving import serve_instead
    from tracesets.service import tokens

    settings = _settings(data_dir)
    budget = connection_budget(raise_descriptor_limit())  # workers inherit the raised limit
    requests_at_once = min(settings.max_connections or budget, budget)
    db = _database(settings)
    token: str | None = None
    if settings.bootstrap_token is not None:
        # Not printed: whoever set it knows it, and the banner ends in the service's logs.
        tokens.ensure(db, settings.bootstrap_token, workspace=DEFAULT_WORKSPACE, name="bootstrap")
    elif not tokens.any_exist(db):
        token = tokens.create(db, workspace=DEFAULT_WORKSPACE, name="first token")
    db.dispose()
    print(_banner(settings, host, port, token, os.environ.get("PATH")), flush=True)
    os.environ["TRACESETS_DATA_DIR"] = str(settings.data_dir)
    serve_instead(host, port, workers, requests_at_once)


def token_create(
    workspace: Annotated[
        str, typer.Option(help="The workspace the token opens.")
    ] = DEFAULT_WORKSPACE,
    name: Annotated[str | None, typer.Option(help="A note to recognise the token by.")] = None,
    scope: Annotated[
        list[str] | None,
        typer.Option(
            help="read, write, promote or metrics; repeat for several (default: read, write "
            "and promote)."
        ),
    ] = None,
    data_dir: DataDir = None,
) -> None:
    """Print a new token for WORKSPACE (stored only as a hash: copy it now)."""
    from tracesets.service import tokens

    if not 1 <= len(workspace) <= 128:
        fail_usage("--workspace must be 1 to 128 characters")
    scopes = scope or list(tokens.SCOPES)
    if unknown := sorted(set(scopes) - set(tokens.ALL_SCOPES)):
        fail_usage(f"--scope must be read, write, promote or metrics; got {', '.join(unknown)}")
    db = _database(_settings(data_dir))
    print(tokens.create(db, workspace=workspace, name=name, scopes=scopes))
    db.dispose()


def token_revoke(
    token: Annotated[str | None, typer.Argument(help="The token's value.")] = None,
    token_id: Annotated[
        int | None, typer.Option("--id", help="The token's id (tracesets token list).")
    ] = None,
    data_dir: DataDir = None,
) -> None:
    """Revoke a token, named by its value or by --id: it stops working at once."""
    from tracesets.service import tokens

    if (token is None) == (token_id is None):
        fail_usage("give either the token's value or --id")
    db = _database(_settings(data_dir))
    done = tokens.revoke(db, token=token, token_id=token_id)
    db.dispose()
    if not done:
        typer.echo("error: no such token, or it was revoked already", err=True)
        raise typer.Exit(1)
    typer.echo("revoked")


def token_list(
    workspace: Annotated[str | None, typer.Option(help="Only this workspace's tokens.")] = None,
    data_dir: DataDir = None,
) -> None:
    """List tokens (never their values): id, workspace, scopes, name, created, revoked."""
    from tracesets.service import tokens

    db = _database(_settings(data_dir))
    for info in tokens.listed(db, workspace=workspace):
        revoked = f"revoked {info.revoked_at:%Y-%m-%d %H:%M}" if info.revoked_at else "active"
        typer.echo(
            f"{info.id}\t{info.workspace}\t{' '.join(info.scopes)}\t{info.name or ''}\t"
            f"{info.created_at:%Y-%m-%d %H:%M}\t{revoked}"
        )
    db.dispose()
