"""``tracesets backup`` and ``tracesets restore``: the embedded default's data folder.

Only SQLite and a local folder: with PostgreSQL and S3 the database and the bucket are
backed up with their own tools (README, "Backups").
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from tracesets.cli.output import REFUSED, fail_usage, say, size, warn
from tracesets.cli.server import DataDir, _settings
from tracesets.settings import Settings


def _embedded(data_dir: Path | None) -> Settings:
    settings = _settings(data_dir)
    if settings.storage_url is not None or not settings.database_url.startswith("sqlite"):
        fail_usage(
            "backup and restore handle SQLite and a local folder only; with DATABASE_URL or "
            "TRACESETS_STORAGE_URL set, back up the database and the bucket with their own "
            "tools (README: Backups)"
        )
    return settings


def backup(
    dest: Annotated[Path, typer.Argument(help="The backup folder to make (new or empty).")],
    data_dir: DataDir = None,
) -> None:
    """Copy the data folder into DEST while the service runs: the database as of one
    moment, every file it lists as received (checked against its sha256), the generated
    secret. Uploads under way and settings in the environment are not in it."""
    from tracesets.service.backups import BackupError, take

    settings = _embedded(data_dir)
    try:
        manifest = take(settings.data_dir, dest)
    except BackupError as error:
        warn(f"error: {error}")
        raise typer.Exit(REFUSED) from error
    counts = ", ".join(f"{n} {status}" for status, n in manifest.tracesets.items())
    say(f"Backed up {counts} tracesets: {manifest.files} files, {size(manifest.total_bytes)}")
    if manifest.dropped:
        say(f"Left out, deleted meanwhile: {' '.join(manifest.dropped)}")
    if manifest.unreceived:
        say(f"{manifest.unreceived} files of pending tracesets changed meanwhile: to send again")
    say(f"in {dest}  (database revision {manifest.revision})")


def restore(
    source: Annotated[Path, typer.Argument(help="A backup folder (tracesets backup).")],
    data_dir: DataDir = None,
) -> None:
    """Make the data folder (new or empty) from the backup SOURCE, checking every file's
    size and sha256; all or nothing. Stop the service first, start it after."""
    from tracesets.service.backups import BackupError
    from tracesets.service.restores import restore as restored

    settings = _embedded(data_dir)
    try:
        manifest = restored(source, settings.data_dir)
    except BackupError as error:
        warn(f"error: {error}")
        raise typer.Exit(REFUSED) from error
    counts = ", ".join(f"{n} {status}" for status, n in manifest.tracesets.items())
    say(f"Restored {counts} tracesets: {manifest.files} files, {size(manifest.total_bytes)}")
    say(f"into {settings.data_dir}  (backup of {manifest.created_at})")
