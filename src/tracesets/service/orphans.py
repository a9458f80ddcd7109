"""The sweep of stored objects without rows: bytes no traceset names.

They come from a crash between a traceset's deletion and its objects' (the row goes
first), a PUT on a URL handed out before its traceset was deleted, or a database
restored to a point behind the bucket. Nothing serves them; they only cost storage.

A traceset's row is written before any URL of its files is handed out, and ids are
never reused, so an object whose traceset id has no row now will never have one: the
sweep deletes it, once older than ``GRACE`` (room for clocks that disagree and a PUT
still arriving). An object whose row exists, a pending traceset's included, is never
touched. Each pass lists a bounded number of pages and remembers where it stopped, so
a bucket of millions of objects is covered over many passes, a page at a time.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Final

from tracesets.db import queries
from tracesets.db.engine import Database
from tracesets.service.core import utcnow
from tracesets.storage.base import BlobStore

log = logging.getLogger("tracesets")

GRACE: Final = timedelta(hours=1)
PAGE: Final = 1000  # S3's largest listing page


class OrphanSweep:
    def __init__(self, db: Database, store: BlobStore) -> None:
        self.db = db
        self.store = store
        self.after: str | None = None  # where the next pass resumes the listing

    def run(self, *, pages: int = 10, grace: timedelta = GRACE) -> int:
        """List up to ``pages`` pages and delete their orphans older than ``grace``;
        how many were deleted."""
        cutoff = utcnow() - grace
        removed = 0
        for _ in range(pages):
            listed, self.after = self.store.stored_keys(self.after, PAGE)
            owners = {key.partition("/")[0] for key, _ in listed}
            with self.db.read() as conn:
                known = queries.existing_ids(conn, owners)
            gone = [
                key
                for key, written in listed
                if key.partition("/")[0] not in known and written < cutoff
            ]
            if gone:
                self.store.delete_keys(gone)
                log.info("swept %d stored objects without a traceset", len(gone))
                removed += len(gone)
            if self.after is None:
                break
        return removed
