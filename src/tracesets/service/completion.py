"""Completing an upload: every file checked whole, then the traceset made ready at once."""

from __future__ import annotations

import asyncio
import base64
import logging
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Final

from sqlalchemy import Connection

from tracesets.db import file_rows, queries
from tracesets.problems import Conflict, Problem
from tracesets.records import Checked, StoredFile, Traceset
from tracesets.service.core import ANSWER_FILES, ServiceCore, not_found, utcnow
from tracesets.storage.base import UploadIncomplete, blob_key

#: Rounds of complete's check-then-commit while uploads keep replacing files.
_COMPLETE_ATTEMPTS = 3
#: Files of a traceset ``complete_on_loop`` checks on the event loop, at most: a look at
#: each file's name (a ``stat``) and their rows, tens of microseconds each.
ON_LOOP_FILES: Final = 64
#: What making a traceset ready gives: the traceset after (None when a file's digest
#: changed since it was checked), whether its files were adopted, whether it was queued.
_Ready = tuple[Traceset | None, bool, bool]


def _base64_sha256(hex_digest: str) -> str:
    """A SHA-256 as S3 writes its checksums."""
    return base64.b64encode(bytes.fromhex(hex_digest)).decode()


log = logging.getLogger("tracesets")


class Completion(ServiceCore):
    def complete(self, workspace: str, traceset_id: str) -> Traceset:
        """Check every file in the store, then make the traceset ready with exactly the
        bytes checked: if a file changed in between (a PUT landed), check again."""
        for _ in range(_COMPLETE_ATTEMPTS):
            # The status first, one row: a traceset of 100,000 files is then read once,
            # either the answer's page (completed before) or every file (to check each).
            with self.db.read() as conn:
                status = queries.get_status(conn, workspace, traceset_id)
            if status is None:
                raise not_found(traceset_id)
            traceset = self.get(workspace, traceset_id) if status == "pending" else None
            if traceset is None or traceset.status != "pending":
                return self.read(workspace, traceset_id)  # the answer shows a page of files
            digests = self._finished(traceset)
            done = self._adopted(
                traceset_id,
                digests,
                self.db.write_soon(self._ready(workspace, traceset_id, digests)),
            )
            if done is not None:
                return done
        raise _kept_arriving(traceset_id)

    async def complete_on_loop(self, workspace: str, traceset_id: str) -> Traceset:
        """``complete`` for a caller on the event loop, where checking a file is a look at
        its name (local files) and a read takes microseconds (SQLite): a pending traceset
        of up to ON_LOOP_FILES files is checked on the loop and only the commit is awaited,
        as upload-url's is; any other goes to a worker thread, whose wait for the commit
        would otherwise hold one of the pool's threads under many clients."""
        for _ in range(_COMPLETE_ATTEMPTS):
            with self.db.read() as conn:
                traceset = queries.get_traceset(
                    conn, workspace=workspace, traceset_id=traceset_id, files_limit=ON_LOOP_FILES
                )
            if traceset is None:
                raise not_found(traceset_id)
            assert traceset.counted is not None  # read with files_limit
            if traceset.counted.count > ON_LOOP_FILES:
                return await asyncio.to_thread(self.complete, workspace, traceset_id)
            if traceset.status != "pending":
                return traceset  # completed before: every file read, as the answer shows them
            digests = self._finished(traceset)
            committed = await self.db.write_async(self._ready(workspace, traceset_id, digests))
            done = self._adopted(traceset_id, digests, committed)
            if done is not None:
                return done
        raise _kept_arriving(traceset_id)

    def _finished(self, traceset: Traceset) -> dict[int, Checked]:
        """How the store found each file whole; Conflict naming every file not whole."""
        digests: dict[int, Checked] = {}
        checked = self.store.checked_at_upload(traceset.id)
        unchecked: list[StoredFile] = []
        for f in traceset.files:
            # Sent in one PUT (no upload id) whose URL signed the declared digest.
            if (
                f.upload_id is None
                and f.sha256_declared
                and checked.get(blob_key(traceset.id, f.idx)) == f.size
            ):
                digests[f.idx] = Checked(
                    f.sha256_declared, "s3-sha256", _base64_sha256(f.sha256_declared)
                )
            else:
                unchecked.append(f)
        missing: list[Problem] = []
        for f, found in zip(unchecked, self._finish_each(traceset.id, unchecked), strict=True):
            if isinstance(found, Checked):
                digests[f.idx] = found
            else:
                missing.append(Problem(f"files[{f.idx}]", f.name, f"{f.name} {found}"))
        if missing:
            raise Conflict.of(missing)
        if checked:
            log.info("checked %d files of %s from the store's listing", len(checked), traceset.id)
        return digests

    def _finish_each(
        self, traceset_id: str, files: list[StoredFile]
    ) -> Iterator[Checked | UploadIncomplete]:
        """Each file finished in the store, in order, ``checks_at_once`` at a time: what it
        holds, or why it is not whole. Any other failure is raised."""

        def finish(f: StoredFile) -> Checked | UploadIncomplete:
            try:
                return self.store.finish_upload(
                    blob_key(traceset_id, f.idx),
                    size=f.size,
                    sha256=f.expected_sha256,
                    upload_id=f.upload_id,
                )
            except UploadIncomplete as why:
                return why

        at_once = min(self.store.checks_at_once, len(files))
        if at_once <= 1:
            yield from map(finish, files)
            return
        pool = ThreadPoolExecutor(at_once, thread_name_prefix="tracesets-complete")
        try:
            yield from pool.map(finish, files)
        finally:  # a store failing ends the checks not yet started
            pool.shutdown(cancel_futures=True)

    def _ready(
        self, workspace: str, traceset_id: str, digests: dict[int, Checked]
    ) -> Callable[[Connection], _Ready]:
        """The transaction making the traceset ready with ``digests``, holding its row (a
        PUT takes it too): the traceset after (None if a file's recorded digest changed
        since they were read), whether its files were adopted, whether it was queued."""
        now = utcnow()

        def ready_row(conn: Connection) -> _Ready:
            queued = adopted = False
            state = queries.traceset_state(
                conn, workspace=workspace, traceset_id=traceset_id, lock=True
            )
            if state is None:
                raise not_found(traceset_id)
            seq, status, _ = state
            if status == "pending":
                current = file_rows.digests(conn, seq=seq)
                # Files declared while the others were being checked have not been.
                late = [f for f in current if f.idx not in digests]
                if late:
                    raise Conflict.of(
                        [
                            Problem(f"files[{f.idx}]", f.name, f"{f.name} has not been received")
                            for f in late
                        ]
                    )
                if any(f.sha256 not in (None, digests[f.idx].sha256) for f in current):
                    return None, False, False
                file_rows.mark_all_received(conn, seq=seq, checked=digests, now=now)
                queries.set_status(conn, seq=seq, status="ready", now=now)
                adopted = True
                if any(f.role == "primary" for f in current):
                    queries.queue_inspection(conn, seq=seq)
                    queued = True
            done = queries.get_traceset(
                conn, workspace=workspace, traceset_id=traceset_id, files_limit=ANSWER_FILES
            )
            assert done is not None
            return done, adopted, queued

        return ready_row

    def _adopted(
        self, traceset_id: str, digests: dict[int, Checked], committed: _Ready
    ) -> Traceset | None:
        """After the commit: from now on no upload can become one of these files."""
        done, adopted, queued = committed
        if done is None:
            return None
        if adopted:
            self.store.drop_superseded(
                traceset_id,
                {blob_key(traceset_id, idx): c.sha256 for idx, c in digests.items()},
            )
        if queued and self.on_inspection_queued is not None:
            self.on_inspection_queued()
        return done


def _kept_arriving(traceset_id: str) -> Conflict:
    return Conflict.of(
        [
            Problem(
                "files",
                traceset_id,
                "Files kept arriving while the upload was being completed; complete it "
                "again once every upload has ended",
            )
        ]
    )
