"""``tracesets restore``: a backup (``tracesets backup``) made a data folder again.

Everything is restored into a new folder beside the target and renamed into place only
once whole, so the target either is the restored data folder or is left as it was. Each
file the backup's database lists as received is hashed as it is copied and checked
against the size and sha256 the database recorded: one missing or different file, and
nothing is restored. A backup of an older schema is migrated; one of a newer schema
(taken by a newer version) is refused before anything is copied.
"""

from __future__ import annotations

from pathlib import Path

from tracesets.db.engine import Database, head_revision, sqlite_url
from tracesets.db.snapshot import Snapshot, copy_file
from tracesets.service.backups import (
    DATABASE,
    SECRET,
    BackupError,
    Manifest,
    assembled,
    copy_checked,
    copy_secret,
)
from tracesets.storage.base import blob_key
from tracesets.storage.local import BLOBS, stored_name


def restore(source: Path, data_dir: Path) -> Manifest:
    """Restore the backup folder ``source`` as the data folder ``data_dir`` (which must
    not exist or be empty); the backup's manifest."""
    manifest = Manifest.read(source)
    if manifest.revision > head_revision():
        raise BackupError(
            f"the backup is of database revision {manifest.revision}, newer than this "
            f"version knows ({head_revision()}): restore it with a newer Tracesets"
        )
    with assembled(data_dir) as draft:
        copy_file(source / DATABASE, draft / DATABASE)
        snapshot = Snapshot(draft / DATABASE)
        try:
            _check(snapshot, manifest, source, draft)
        finally:
            snapshot.close()
        copy_secret(source / SECRET, draft / SECRET)
        if manifest.revision < head_revision():
            database = Database(sqlite_url(draft))
            try:
                database.migrate()
            finally:
                database.dispose()
    return manifest


def _check(snapshot: Snapshot, manifest: Manifest, source: Path, draft: Path) -> None:
    """Copy every received file the database lists into ``draft``, checked."""
    problem = snapshot.check()
    if problem is not None:
        raise BackupError(f"the backup's database is damaged: {problem}")
    if snapshot.revision() != manifest.revision:
        raise BackupError(
            f"the backup's database is at revision {snapshot.revision()}, its manifest "
            f"says {manifest.revision}"
        )
    wrong: list[str] = []
    for file in snapshot.received():
        name = stored_name(blob_key(file.traceset_id, file.idx), file.sha256)
        try:
            found = copy_checked(
                source / BLOBS / name, draft / BLOBS / name, size=file.size, sha256=file.sha256
            )
        except FileNotFoundError:
            found = "missing"
        if found is not None:
            wrong.append(f"{name}: {found}")
    if wrong:
        raise BackupError(
            f"{len(wrong)} file(s) of the backup are missing or differ from its database, "
            "so nothing was restored: " + "; ".join(wrong[:10])
        )
