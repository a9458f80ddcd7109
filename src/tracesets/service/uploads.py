"""Creating an upload and adding files to it; what is left to send, where, is ``targets``."""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Callable
from datetime import timedelta

from sqlalchemy import Connection
from sqlalchemy.exc import IntegrityError

from tracesets import workload
from tracesets.db import file_rows, idempotency, queries
from tracesets.problems import Conflict, InvalidRequest, Problem, Unprocessable
from tracesets.records import StoredFile, Traceset
from tracesets.service.core import not_found, parse_body, utcnow
from tracesets.service.names import stored_alike
from tracesets.service.quota import check_quota
from tracesets.service.targets import Targets, UploadTarget
from tracesets.storage.base import UploadPlan, blob_key
from tracesets.uploadrequest import (
    PartDigests,
    UploadRequest,
    read_file_additions,
    read_upload_request,
)

log = logging.getLogger("tracesets")

IDEMPOTENCY_WINDOW = timedelta(hours=24)


def new_traceset_id() -> str:
    """128 random bits in 32 hex digits: an id nobody can guess, as a UUIDv4's hex is,
    without building a ``UUID`` (3 % of upload-url's time on the event loop). The
    system's random bytes, as ``uuid4`` and ``secrets`` take them."""
    return os.urandom(16).hex()


def _planned(traceset: Traceset, plans: list[UploadPlan]) -> list[UploadTarget]:
    return [
        UploadTarget(f.name, f.role, plan, f.idx)
        for f, plan in zip(traceset.files, plans, strict=True)
    ]


class Uploads(Targets):
    def create_upload(
        self, workspace: str, body: bytes, base_url: str, idempotency_key: str | None = None
    ) -> tuple[Traceset, list[UploadTarget]]:
        """Check a raw upload-url body and store the pending traceset; nothing on failure.

        With an Idempotency-Key, the same key and body within 24 hours answer the traceset
        the first request made (with fresh URLs); the same key with another body is 422.
        """
        request = self._read_upload(body)
        body_sha256 = hashlib.sha256(body).hexdigest()
        if idempotency_key is not None:
            with self.db.read() as conn:
                earlier = self._earlier_answer(conn, workspace, idempotency_key, body_sha256)
            if earlier is not None:
                return earlier, self._resume(earlier, base_url)
        traceset_id = new_traceset_id()
        plans = self._plans(traceset_id, request, base_url)
        insert = self._inserter(
            workspace, traceset_id, request, plans, body_sha256, idempotency_key
        )
        try:
            try:
                traceset = self.db.write_soon(insert)
            except IntegrityError:
                # Only the idempotency key can collide: the retry answers what the winner made.
                if idempotency_key is None:
                    raise
                traceset = self.db.write_soon(insert)
        except BaseException:
            self._abort(traceset_id, plans)
            raise
        if traceset.id != traceset_id:  # a concurrent request with the same key won
            self._abort(traceset_id, plans)
            return traceset, self._resume(traceset, base_url)
        return traceset, _planned(traceset, plans)

    async def create_upload_on_loop(
        self, workspace: str, body: bytes, base_url: str
    ) -> tuple[Traceset, list[UploadTarget]]:
        """``create_upload`` without an Idempotency-Key, for a caller on the event loop.

        The checks run on the loop (tens of microseconds) and only the commit is awaited,
        so a request costs no worker thread. Only for a store whose plans need no I/O
        (local files: an HMAC each); S3's may start multipart uploads.
        """
        request = self._read_upload(body)
        traceset_id = new_traceset_id()
        plans = self._plans(traceset_id, request, base_url)
        body_sha256 = hashlib.sha256(body).hexdigest()
        insert = self._inserter(workspace, traceset_id, request, plans, body_sha256, None)
        try:
            traceset = await self.db.write_async(insert)
        except BaseException:
            self._abort(traceset_id, plans)
            raise
        return traceset, _planned(traceset, plans)

    def _read_upload(self, body: bytes) -> UploadRequest:
        return read_upload_request(
            parse_body(body),
            max_files=self.limits.files_per_request,
            max_metadata_bytes=self.limits.max_metadata_bytes,
        )

    def _plans(self, traceset_id: str, request: UploadRequest, base_url: str) -> list[UploadPlan]:
        return [
            self.store.plan_upload(
                blob_key(traceset_id, idx),
                size=f.size,
                sha256=f.sha256,
                base_url=base_url,
                parts=f.parts,
            )
            for idx, f in enumerate(request.files)
        ]

    def _inserter(
        self,
        workspace: str,
        traceset_id: str,
        request: UploadRequest,
        plans: list[UploadPlan],
        body_sha256: str,
        idempotency_key: str | None,
    ) -> Callable[[Connection], Traceset]:
        """The write of a new traceset, for a (group-committed) write transaction."""

        def insert(conn: Connection) -> Traceset:
            if idempotency_key is not None:
                earlier = self._earlier_answer(conn, workspace, idempotency_key, body_sha256)
                if earlier is not None:
                    return earlier
            if request.baseline_id is not None and (
                queries.get_status(conn, workspace, request.baseline_id) is None
            ):
                raise InvalidRequest.of(
                    [
                        Problem(
                            "baselineId",
                            request.baseline_id,
                            f"No traceset {request.baseline_id} in this workspace to compare with",
                        )
                    ]
                )
            declared = sum(f.size for f in request.files)
            check_quota(conn, workspace, self.limits.quota_bytes, declared, "files")
            now = utcnow()
            traceset = queries.insert_traceset(
                conn,
                workspace=workspace,
                traceset_id=traceset_id,
                request=request,
                uploads=[(p.upload_id, p.part_size) for p in plans],
                now=now,
            )
            if idempotency_key is not None:
                idempotency.insert_idempotency_key(
                    conn,
                    workspace=workspace,
                    key=idempotency_key,
                    request_sha256=body_sha256,
                    traceset_id=traceset_id,
                    now=now,
                )
            return traceset

        return insert

    def _abort(self, traceset_id: str, plans: list[UploadPlan]) -> None:
        aborted = 0
        for idx, plan in enumerate(plans):
            if plan.upload_id is not None:
                self.store.abort_upload(blob_key(traceset_id, idx), plan.upload_id)
                aborted += 1
        if aborted:
            log.info(
                "aborted %d multipart uploads of traceset %s, never recorded",
                aborted,
                traceset_id,
                extra={"event": "uploads.aborted", "traceset_id": traceset_id, "files": aborted},
            )

    def _earlier_answer(
        self, conn: Connection, workspace: str, key: str, body_sha256: str
    ) -> Traceset | None:
        since = utcnow() - IDEMPOTENCY_WINDOW
        earlier = idempotency.find_idempotency_key(conn, workspace=workspace, key=key, since=since)
        if earlier is None:
            return None
        request_sha256, traceset_id = earlier
        if request_sha256 != body_sha256:
            raise Unprocessable.of(
                [
                    Problem(
                        "Idempotency-Key",
                        key,
                        "This Idempotency-Key was used with another request body in the last "
                        "24 hours; use a new key for a new request",
                    )
                ]
            )
        traceset = queries.get_traceset(conn, workspace=workspace, traceset_id=traceset_id)
        if traceset is None:
            raise Conflict.of(
                [
                    Problem(
                        "Idempotency-Key",
                        key,
                        f"The traceset {traceset_id} this key created was deleted",
                    )
                ]
            )
        return traceset

    def _resume(self, traceset: Traceset, base_url: str) -> list[UploadTarget]:
        """Fresh URLs for whatever has not arrived; records new multipart uploads."""
        return self.upload_status(traceset.workspace, traceset.id, base_url).uploads

    def add_files(
        self, workspace: str, traceset_id: str, body: bytes, base_url: str
    ) -> list[UploadTarget]:
        """Declare more files of a pending traceset and answer an upload entry for each.

        A file declared again exactly as before (a retried rank) is answered again, its
        missing bytes only; one whose bytes have all arrived has nothing left to send and
        gets no entry. Indices are taken and names compared (``stored_alike``) under the
        traceset's lock, so any number of concurrent requests each get their own, and of
        two that add one name spelled two ways only the first succeeds (the unique index
        of name keys holds that in the database whatever the path).
        """
        parsed = parse_body(body)
        with self.db.read() as conn:  # another workspace's traceset is 404 whatever the body
            if queries.traceset_state(conn, workspace=workspace, traceset_id=traceset_id) is None:
                raise not_found(traceset_id)
        specs = read_file_additions(parsed, max_files=self.limits.files_per_request)

        def add(conn: Connection) -> tuple[int, list[StoredFile], dict[int, PartDigests | None]]:
            locked = queries.traceset_state(
                conn, workspace=workspace, traceset_id=traceset_id, lock=True
            )
            if locked is None:
                raise not_found(traceset_id)
            seq, status, rank_count = locked
            if status != "pending":
                raise Conflict.of(
                    [
                        Problem(
                            "status",
                            status,
                            f"Files can be added only while a traceset is pending; this one "
                            f"is {status}: upload a new traceset instead",
                        )
                    ]
                )
            if rank_count is None and any(f.role == "primary" for f in specs):
                raise Conflict.of(
                    [
                        Problem(
                            "files",
                            [f.name for f in specs if f.role == "primary"],
                            f"This traceset declares no rank count, so it cannot take primary "
                            f"files. {workload.MISSING_RANK_COUNT}",
                        )
                    ]
                )
            earlier = stored_alike(conn, seq, specs)
            new = [f for f in specs if f.name not in earlier]
            first = file_rows.file_count(conn, seq=seq)
            if first + len(new) > self.limits.max_files:
                raise Conflict.of(
                    [
                        Problem(
                            "files",
                            len(new),
                            f"This traceset declares {first:,} files; {len(new):,} more would "
                            f"exceed the limit of {self.limits.max_files:,} files",
                        )
                    ]
                )
            declared = sum(f.size for f in new)
            check_quota(conn, workspace, self.limits.quota_bytes, declared, "files")
            added = {
                f.name: f for f in file_rows.insert_files(conn, seq=seq, specs=new, first_idx=first)
            }
            stored = [earlier.get(f.name) or added[f.name] for f in specs]
            parts = {f.name: f.parts for f in specs}
            return seq, stored, {f.idx: parts[f.name] for f in added.values()}

        seq, stored, new = self.db.write_soon(add)
        return self._targets(traceset_id, seq, stored, base_url, new)[1]
