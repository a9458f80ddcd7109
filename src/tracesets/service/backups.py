"""``tracesets backup``: a consistent copy of the embedded default while it serves.

A backup folder holds the database (``tracesets.db``, copied as of one commit by SQLite's
online backup API), the bytes of every file that copy lists as received (``blobs/``,
laid out as in the data folder), the generated signing secret when the data folder has
one (``secret``: signed URLs handed out before stay valid), and ``manifest.json``.

The database is copied first, then the files it names: a file received after the copy is
not in it, so nothing in the backup names bytes it lacks. A file the copy names may have
gone by the time it is read (its traceset deleted, a pending file replaced by a newer
upload): its traceset is dropped from the copy when it was ready or promoted (it was
being deleted), and a pending traceset's file is marked not received (its client sends
it again). Every file is hashed as it is copied; bytes that disagree with the database
fail the backup, naming them, rather than be kept as if they were sound.

Left out: uploads under way (``tmp/``), settings given in the environment (a
``TRACESETS_SECRET`` is the operator's to keep), the service's logs.

The backup is assembled in a folder beside its destination and renamed into place once
whole: a folder named DEST is a complete backup.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tracesets import jsontext
from tracesets.db.engine import head_revision
from tracesets.db.snapshot import Snapshot, copy_live
from tracesets.storage.base import blob_key
from tracesets.storage.local import BLOBS, stored_name, stored_path

DATABASE = "tracesets.db"
SECRET = "secret"
MANIFEST = "manifest.json"
#: The manifest's own layout; a restore refuses one it does not know.
FORMAT = 1
_CHUNK = 1024 * 1024


class BackupError(Exception):
    """A backup or restore could not be made; the message says why, and nothing was left."""


@dataclass
class Manifest:
    """What a backup holds, written last: read by a restore before anything is copied."""

    revision: str
    created_at: str = field(default_factory=lambda: datetime.now(UTC).isoformat())
    tracesets: dict[str, int] = field(default_factory=dict)
    files: int = 0
    total_bytes: int = 0
    secret: bool = False
    #: Tracesets that were deleted while the backup was taken, dropped from it.
    dropped: list[str] = field(default_factory=list)
    #: Pending tracesets' files replaced or deleted meanwhile, now to be sent again.
    unreceived: int = 0

    def to_json(self) -> bytes:
        return jsontext.dumps(
            {
                "format": FORMAT,
                "createdAt": self.created_at,
                "revision": self.revision,
                "tracesets": self.tracesets,
                "files": self.files,
                "bytes": self.total_bytes,
                "secret": self.secret,
                "dropped": self.dropped,
                "unreceived": self.unreceived,
            }
        )

    @classmethod
    def read(cls, folder: Path) -> Manifest:
        try:
            raw: Any = jsontext.loads((folder / MANIFEST).read_bytes())
        except (OSError, ValueError) as error:
            raise BackupError(f"{folder} is not a Tracesets backup: {error}") from error
        if not isinstance(raw, dict) or raw.get("format") != FORMAT:
            raise BackupError(
                f"{folder / MANIFEST} is of a backup format this version does not know "
                f"(format {raw.get('format') if isinstance(raw, dict) else None!r}; "
                f"it reads {FORMAT})"
            )
        return cls(
            revision=str(raw["revision"]),
            created_at=str(raw["createdAt"]),
            tracesets=dict(raw["tracesets"]),
            files=int(raw["files"]),
            total_bytes=int(raw["bytes"]),
            secret=bool(raw["secret"]),
            dropped=list(raw["dropped"]),
            unreceived=int(raw["unreceived"]),
        )


def copy_checked(source: Path, target: Path, *, size: int, sha256: str) -> str | None:
    """Copy ``source`` to a new file ``target``, on disk when this returns, hashing the
    bytes as they pass; None when they are ``size`` bytes of digest ``sha256``, else
    what differs (``target`` is then removed). FileNotFoundError when there is no
    ``source``."""
    digest = hashlib.sha256()
    count = 0
    target.parent.mkdir(parents=True, exist_ok=True)
    with source.open("rb") as reader, target.open("xb") as writer:
        while chunk := reader.read(_CHUNK):
            digest.update(chunk)
            count += len(chunk)
            writer.write(chunk)
        writer.flush()
        os.fsync(writer.fileno())
    if count != size or digest.hexdigest() != sha256:
        target.unlink()
        return f"{count} bytes of sha256 {digest.hexdigest()}, not {size} of {sha256}"
    return None


@contextmanager
def assembled(target: Path) -> Iterator[Path]:
    """A new folder beside ``target`` to fill, renamed to ``target`` if the block ends
    well and removed if not: ``target`` is never seen half made. ``target`` must not
    exist or be an empty folder (rename replaces an empty one)."""
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise BackupError(f"{target} exists and is not an empty folder")
    target.parent.mkdir(parents=True, exist_ok=True)
    draft = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        yield draft
        _sync_folder(draft)
        draft.rename(target)
    except BaseException:
        shutil.rmtree(draft, ignore_errors=True)
        raise
    _sync_folder(target.parent)


def _sync_folder(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def copy_secret(source: Path, target: Path) -> bool:
    """Copy the generated secret, readable by its owner alone; False when there is none."""
    if not source.is_file():
        return False
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(source.read_bytes())
        out.flush()
        os.fsync(out.fileno())
    return True


def take(data_dir: Path, dest: Path) -> Manifest:
    """Back up the data folder ``data_dir`` into the new folder ``dest``."""
    live = data_dir / DATABASE
    if not live.is_file():
        raise BackupError(f"{data_dir} holds no Tracesets database ({DATABASE})")
    with assembled(dest) as draft:
        copy_live(live, draft / DATABASE)
        snapshot = Snapshot(draft / DATABASE)
        try:
            manifest = _fill(snapshot, data_dir, draft)
        finally:
            snapshot.close()
        manifest.secret = copy_secret(data_dir / SECRET, draft / SECRET)
        (draft / MANIFEST).write_bytes(manifest.to_json())
    return manifest


def _fill(snapshot: Snapshot, data_dir: Path, draft: Path) -> Manifest:
    revision = snapshot.revision()
    if revision is None or revision > head_revision():
        raise BackupError(
            f"the database in {data_dir} is at revision {revision}, which this version "
            f"(revision {head_revision()}) does not know: back it up with the service's version"
        )
    manifest = Manifest(revision=revision)
    dropped: dict[int, str] = {}
    unreceived: list[tuple[int, int]] = []
    wrong: list[str] = []
    for file in snapshot.received():
        if file.seq in dropped:
            continue
        key = blob_key(file.traceset_id, file.idx)
        try:
            found = copy_checked(
                stored_path(data_dir / BLOBS, key, file.sha256),
                draft / BLOBS / stored_name(key, file.sha256),
                size=file.size,
                sha256=file.sha256,
            )
        except FileNotFoundError:
            if file.status == "pending":
                unreceived.append((file.seq, file.idx))
            else:
                dropped[file.seq] = file.traceset_id
                shutil.rmtree(draft / BLOBS / file.traceset_id, ignore_errors=True)
            continue
        if found is not None:
            wrong.append(f"{key}: {found}")
    if wrong:
        raise BackupError(
            f"{len(wrong)} stored file(s) differ from what the database recorded: "
            + "; ".join(wrong[:10])
        )
    snapshot.drop(dropped)
    snapshot.unreceive(unreceived)
    manifest.dropped = sorted(dropped.values())
    manifest.unreceived = len(unreceived)
    manifest.tracesets, manifest.files, manifest.total_bytes = snapshot.totals()
    return manifest
