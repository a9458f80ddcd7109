"""The bytes of the local store, through the service's own signed URLs.

With files in a local folder the service is the storage endpoint: it checks the URL's
signature, streams the body into place (``LocalBlobStore.receive``) and records the
arrival. With S3 none of this runs: clients talk to the bucket.

Bytes are frozen once a traceset is complete, whatever a PUT's timing. A PUT writes
its bytes under a name of their own (their digest), then records that name in one
transaction that holds the traceset's row (``file_rows.adopt_received``) and does so
only while the traceset is pending; ``complete`` takes the same row exclusively. So a
PUT that ends after ``complete`` never becomes the file: it answers 409 and its bytes
are removed. Each request reads one file's row and its traceset's status, never the
traceset's other files: its cost does not grow with the traceset.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from tracesets.db import file_rows
from tracesets.db.engine import Database
from tracesets.problems import Conflict, Forbidden, NotFound, Problem
from tracesets.records import StoredFile
from tracesets.storage.base import blob_key
from tracesets.storage.local import LocalBlobStore
from tracesets.storage.signing import Method, URLSigner
from tracesets.vocabulary import Status


def _gone(key: str) -> NotFound:
    return NotFound.of([Problem("url", key, "This file's traceset no longer exists")])


def _lost(key: str) -> NotFound:
    """A received file whose bytes are not in the folder: removed behind the service's
    back, or a database restored ahead of its files. Never served as if it were there."""
    return NotFound.of(
        [
            Problem(
                "url",
                key,
                "This file's bytes are missing from the service's storage: the traceset "
                "cannot be downloaded whole; restore its files from a backup",
            )
        ]
    )


def _frozen(key: str, status: str) -> Conflict:
    return Conflict.of(
        [
            Problem(
                "url",
                key,
                f"This file's traceset is {status}: its bytes were fixed when its upload was "
                "completed, and other bytes are not kept",
            )
        ]
    )


@dataclass(frozen=True, slots=True)
class Signed:
    """A file's URL whose signature was checked: only ``LocalTransfers.verify`` makes one,
    so whatever takes it knows the check was made, once."""

    method: Method
    traceset_id: str
    idx: int

    @property
    def key(self) -> str:
        return blob_key(self.traceset_id, self.idx)


class LocalTransfers:
    def __init__(self, db: Database, store: LocalBlobStore, signer: URLSigner) -> None:
        self.db = db
        self.store = store
        self.signer = signer

    def verify(
        self, method: Method, traceset_id: str, idx: int, expires: str | None, signature: str | None
    ) -> Signed:
        """403 unless the URL is one the service signed, unexpired: no database read.

        An upload checks this before it waits for a slot, so a forged or expired URL is
        refused at once and never holds a place in the queue that real uploads wait in."""
        why = self.signer.verify(method, blob_key(traceset_id, idx), expires, signature)
        if why is not None:
            raise Forbidden.of([Problem("signature", signature, why)])
        return Signed(method, traceset_id, idx)

    def _file(self, signed: Signed) -> file_rows.OneFile:
        found = file_rows.one_file(
            self.db, traceset_id=signed.traceset_id, workspace=None, idx=signed.idx
        )
        if found is None:
            raise _gone(signed.key)
        return found

    async def receive(self, signed: Signed, chunks: AsyncIterator[bytes]) -> None:
        """Take the body of the signed PUT ``signed`` (``verify``) as its file's bytes."""
        if signed.method != "PUT":
            raise ValueError(f"a {signed.method} URL cannot upload")
        if self.db.is_sqlite:
            # A read of SQLite in WAL mode never waits for a writer: cheaper here than a
            # turn of a worker thread, which may all be waiting on other uploads' fsyncs.
            found = self._file(signed)
        else:
            found = await asyncio.to_thread(self._file, signed)
        key, file = signed.key, found.file
        if found.status != "pending":
            # Complete: the same bytes again are harmless (checked, then dropped), others refused.
            received = await self.store.receiver.receive(None, chunks, size=file.size, sha256=None)
            if received.sha256 != file.sha256:
                raise _frozen(key, found.status)
            return
        now = datetime.now(UTC)
        received, outcome = await self.store.receiver.receive_and_record(
            key,
            chunks,
            size=file.size,
            sha256=file.sha256_declared,
            record=lambda sha256: self.db.write_later(
                lambda conn: file_rows.adopt_received(
                    conn, seq=found.seq, idx=signed.idx, sha256=sha256, now=now
                )
            ),
        )
        self._adopted(key, received.sha256, outcome)

    def _adopted(self, key: str, sha256: str, outcome: tuple[Status, str | None] | None) -> None:
        """Whether the bytes just placed became the file's: only while its traceset was
        pending. Its row was written in a group commit (on SQLite, one fsync for the PUTs
        that end together), started by the thread that placed the bytes
        (``receive_and_record``); the PUT is answered once it is on disk."""
        if outcome is None:
            self.store.delete(key, sha256)  # deleted while the bytes were arriving
            raise _gone(key)
        status, recorded = outcome
        if recorded != sha256:
            # Completed while the bytes were arriving: they are not the file's.
            self.store.delete(key, sha256)
            raise _frozen(key, status)

    def download(self, signed: Signed) -> tuple[StoredFile, Path]:
        """The file a signed download URL (``verify``) names and where its bytes are."""
        if signed.method != "GET":
            raise ValueError(f"a {signed.method} URL cannot download")
        file, key = self._file(signed).file, signed.key
        if file.sha256 is None:
            raise _gone(key)
        path = self.store.path(key, file.sha256)
        if not path.exists():
            raise _lost(key)
        return file, path
