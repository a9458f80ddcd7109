"""Files in a local folder, received through the service's own signed PUT URLs.

An upload streams into a temporary file beside its destination and is renamed into
place only once its byte count and sha256 check out and its bytes are on disk
(``storage.receive``): a file is never visible half written, and a refused upload
leaves nothing behind.

A file's bytes are kept under a name made of its key and their sha256
(``TRACESET/INDEX.SHA256``), and the database records that digest: what a row
describes is always exactly the bytes its name holds, and no later upload can
replace them, as other bytes land under another name. Which name counts is decided
by the database (``LocalTransfers``), only while the traceset is pending.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path

from tracesets.inspection.source import FileSource
from tracesets.records import Checked
from tracesets.storage.base import UploadIncomplete, UploadPlan
from tracesets.storage.receive import Receiver
from tracesets.storage.signing import Method, URLSigner
from tracesets.uploadrequest import PartDigests

#: The folder, in the data folder, that holds the files' bytes.
BLOBS = "blobs"


class LocalBlobStore:
    """The ``BlobStore`` of a folder; its upload and download URLs point at the service."""

    checks_at_once = 1
    remote = False
    multipart_threshold = None  # the service receives every file in one PUT

    def __init__(
        self,
        root: Path,
        signer: URLSigner,
        *,
        url_path: str | None = None,
        upload_ttl: int = 6 * 3600,
        download_ttl: int = 900,
    ) -> None:
        # The service mounts the signed-URL route; the store only prefixes its keys with it.
        self.root = root
        self.url_path = url_path
        self.signer = signer
        self.upload_ttl = upload_ttl
        self.download_ttl = download_ttl
        self.blobs = root / BLOBS
        self.tmp = root / "tmp"
        self.blobs.mkdir(parents=True, exist_ok=True)
        self.tmp.mkdir(parents=True, exist_ok=True)
        self.receiver = Receiver(self.tmp, self._named)

    def check(self) -> None:
        """Fail, naming the folder, unless the files' folders are there to write in (a
        disk unmounted or a folder removed under a running service)."""
        for folder in (self.blobs, self.tmp):
            if not folder.is_dir() or not os.access(folder, os.W_OK | os.X_OK):
                raise RuntimeError(f"cannot write in the folder {folder}")

    def sweep_tmp(self, cutoff: float) -> int:
        """Remove temporary files last written before ``cutoff`` (a Unix time) whose
        upload is dead: no process holds their lock. Returns how many were removed.

        Such leftovers of uploads cut short by a crash are never visible. A live
        upload, of this process or another sharing the folder, holds its file's lock;
        the age spares a file just created and not yet locked.
        """
        removed = 0
        for leftover in self.tmp.iterdir():
            with contextlib.suppress(FileNotFoundError):
                if leftover.stat().st_mtime < cutoff and _unlocked(leftover):
                    leftover.unlink()
                    removed += 1
        return removed

    def path(self, key: str, sha256: str) -> Path:
        """Where the bytes of ``key`` with digest ``sha256`` are, once received."""
        return stored_path(self.blobs, key, sha256)

    def _named(self, key: str, sha256: str) -> Path:
        return self.blobs / stored_name(key, sha256)

    # -- BlobStore: plans, checks and URLs --------------------------------------------------

    def _signed_url(self, method: Method, key: str, ttl: int, base_url: str) -> tuple[str, int]:
        if self.url_path is None:
            raise RuntimeError("this store was opened without the route its URLs are served on")
        query, expires = self.signer.query(method, key, ttl)
        return f"{base_url}{self.url_path}/{key}?{query}", expires

    def plan_upload(
        self,
        key: str,
        *,
        size: int,
        sha256: str | None,
        base_url: str,
        parts: PartDigests | None = None,
    ) -> UploadPlan:
        # One PUT through the service, which hashes the bytes as they arrive: no parts.
        url, expires = self._signed_url("PUT", key, self.upload_ttl, base_url)
        return UploadPlan(expires_at=datetime.fromtimestamp(expires, UTC), url=url)

    def resume_upload(
        self,
        key: str,
        *,
        size: int,
        sha256: str | None,
        upload_id: str | None,
        part_size: int | None,
        base_url: str,
    ) -> UploadPlan | None:
        if self.arrived(key, size=size, sha256=sha256, upload_id=None, part_size=None):
            return None
        return self.plan_upload(key, size=size, sha256=sha256, base_url=base_url)

    def arrived(
        self,
        key: str,
        *,
        size: int,
        sha256: str | None,
        upload_id: str | None,
        part_size: int | None,
    ) -> bool:
        return sha256 is not None and self.size_of(key, sha256) == size

    def checked_at_upload(self, prefix: str) -> Mapping[str, int]:
        """None: ``finish_upload`` is a look at one file's name, as cheap as a listing."""
        return {}

    def finish_upload(
        self, key: str, *, size: int, sha256: str | None, upload_id: str | None
    ) -> Checked:
        # receive() placed the file under its digest only after checking its size and
        # digest: what is left to know is whether the file the row names is there.
        if sha256 is None or self.size_of(key, sha256) != size:
            raise UploadIncomplete("has not been received")
        return Checked(sha256, "sha256", sha256)

    def download_url(self, key: str, *, filename: str, base_url: str) -> str:
        return self._signed_url("GET", key, self.download_ttl, base_url)[0]

    def open_source(self, key: str, *, sha256: str, size: int | None = None) -> FileSource:
        found = self._found(key, sha256)
        if found is None:
            return FileSource(self._named(key, sha256))  # raises FileNotFoundError, naming it
        return FileSource(found[0], size=found[1])

    def abort_upload(self, key: str, upload_id: str) -> None:
        """Nothing to abort: a local upload is one PUT, and a refused one leaves nothing."""

    def size_of(self, key: str, sha256: str) -> int | None:
        """The size of the bytes ``path`` names: ``complete`` asks it of every file."""
        found = self._found(key, sha256)
        return None if found is None else found[1]

    def _found(self, key: str, sha256: str) -> tuple[str, int] | None:
        """Where the bytes of ``key`` are and their size, from one ``stat`` where they are
        under their digest (``path`` looks, then a reader stats again): ``complete`` and the
        inspection ask it of every file, 100,000 for a job of as many ranks."""
        blobs = os.fspath(self.blobs)
        for name in (f"{blobs}/{key}.{sha256}", f"{blobs}/{key}"):  # the legacy name second
            try:
                return name, os.stat(name).st_size
            except FileNotFoundError:
                continue
        return None

    def delete(self, key: str, sha256: str) -> None:
        self._named(key, sha256).unlink(missing_ok=True)

    def drop_superseded(self, prefix: str, kept: Mapping[str, str]) -> None:
        """Remove the bytes under ``prefix/`` that no file names: uploads replaced by a
        later one before ``complete``, and late ones it refused. ``kept`` maps each key
        to its digest.

        The folder is listed once and each kept file's name looked up in the listing, as
        ``path`` would find it (under its digest, else under the legacy name): a ``stat``
        a file took 6 s of a 100,000-file ``complete``."""
        folder = self.blobs / prefix
        try:
            present = set(os.listdir(folder))
        except FileNotFoundError:
            return
        wanted: set[str] = set()
        for key, sha256 in kept.items():
            legacy = key.rpartition("/")[2]
            named = f"{legacy}.{sha256}"
            wanted.add(legacy if named not in present and legacy in present else named)
        for name in present - wanted:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(folder / name)

    def delete_prefix(self, prefix: str) -> None:
        shutil.rmtree(self.blobs / prefix, ignore_errors=True)

    def stored_keys(
        self, after: str | None, limit: int
    ) -> tuple[list[tuple[str, datetime]], str | None]:
        """None: a traceset's files go with its folder, removed in one call right after its
        row (``delete_prefix``), and a backup copies only the files its rows name."""
        return [], None

    def delete_keys(self, keys: Sequence[str]) -> None:
        """Nothing is ever listed (``stored_keys``), so nothing is asked to go."""


def stored_name(key: str, sha256: str) -> str:
    """The name, under the files' folder, of the bytes of ``key`` with digest ``sha256``."""
    return f"{key}.{sha256}"


def stored_path(blobs: Path, key: str, sha256: str) -> Path:
    """Where, under the files' folder ``blobs``, the bytes of ``key`` are once received
    (a backup reads a data folder no service opened: no store, no secret)."""
    named = blobs / stored_name(key, sha256)
    if not named.exists():
        legacy = blobs / key  # stored before names carried the digest
        if legacy.exists():
            return legacy
    return named


def _unlocked(path: Path) -> bool:
    """Whether no process holds the file's lock (taking it, then letting it go at once)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(
            fd, fcntl.LOCK_SH | fcntl.LOCK_NB
        )  # shared: works on a read-only fd over NFS too
    except BlockingIOError:
        return False
    finally:
        os.close(fd)
    return True
