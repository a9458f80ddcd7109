"""The bytes of the local store, through the service's own signed URLs.

With files in a local folder the service is the storage endpoint: it checks the URL's
signature, streams the body into place (``LocalBlobStore.receive``) and records the
arrival. With S3 none of this runs: clients talk to the bucket.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

from tracesets.db import queries
from tracesets.db.engine import Database
from tracesets.problems import Forbidden, NotFound, Problem
from tracesets.records import StoredFile, Traceset
from tracesets.storage.local import LocalBlobStore
from tracesets.storage.signing import Method, URLSigner


def _key(traceset_id: str, idx: int) -> str:
    return f"{traceset_id}/{idx}"


def _gone(key: str) -> NotFound:
    return NotFound.of([Problem("url", key, "This file's traceset no longer exists")])


class LocalTransfers:
    def __init__(self, db: Database, store: LocalBlobStore, signer: URLSigner) -> None:
        self.db = db
        self.store = store
        self.signer = signer

    def _signed_file(
        self, method: Method, traceset_id: str, idx: int, expires: str | None, signature: str | None
    ) -> tuple[Traceset, StoredFile]:
        key = _key(traceset_id, idx)
        why = self.signer.verify(method, key, expires, signature)
        if why is not None:
            raise Forbidden.of([Problem("signature", signature, why)])
        with self.db.read() as conn:
            traceset = queries.get_traceset(conn, workspace=None, traceset_id=traceset_id)
        file = traceset.file_at(idx) if traceset is not None else None
        if traceset is None or file is None:
            raise _gone(key)
        return traceset, file

    async def receive(
        self,
        traceset_id: str,
        idx: int,
        chunks: AsyncIterator[bytes],
        *,
        expires: str | None,
        signature: str | None,
    ) -> None:
        traceset, file = await asyncio.to_thread(
            self._signed_file, "PUT", traceset_id, idx, expires, signature
        )
        key = _key(traceset_id, idx)
        if traceset.status != "pending":
            # Complete: the same bytes again are harmless (checked, then dropped), others refused.
            await self.store.receive(None, chunks, size=file.size, sha256=file.sha256)
            return
        received = await self.store.receive(
            key, chunks, size=file.size, sha256=file.sha256_declared
        )
        await asyncio.to_thread(self._record, traceset, idx, received.sha256)

    def _record(self, traceset: Traceset, idx: int, sha256: str) -> None:
        key = _key(traceset.id, idx)
        with self.db.write() as conn:
            if queries.get_traceset(conn, workspace=None, traceset_id=traceset.id) is None:
                self.store.delete(key)  # deleted while the bytes were arriving
                raise _gone(key)
            queries.mark_received(
                conn, seq=traceset.seq, idx=idx, sha256=sha256, now=datetime.now(UTC)
            )

    def download(
        self, traceset_id: str, idx: int, *, expires: str | None, signature: str | None
    ) -> tuple[StoredFile, Path]:
        """The file a signed download URL names and where its bytes are."""
        _, file = self._signed_file("GET", traceset_id, idx, expires, signature)
        path = self.store.path(_key(traceset_id, idx))
        if not path.exists():
            raise _gone(_key(traceset_id, idx))
        return file, path
