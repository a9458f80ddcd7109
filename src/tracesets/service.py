"""The use cases: create an upload, receive a file, complete, read, list, download, delete.

No HTTP here: routes parse and render, this module decides. Every use case that
reads, checks and writes does so in one transaction, so a failure changes nothing.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hashlib
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy import Connection
from sqlalchemy.exc import IntegrityError

from tracesets import jsontext, promotion
from tracesets.db import queries
from tracesets.db.engine import Database
from tracesets.db.queries import ListFilter
from tracesets.jsontext import JsonValue
from tracesets.problems import Conflict, Forbidden, InvalidRequest, NotFound, Problem, Unprocessable
from tracesets.records import StoredFile, Traceset
from tracesets.storage.local import LocalBlobStore
from tracesets.storage.signing import URLSigner
from tracesets.uploadrequest import read_upload_request

BLOB_ROUTE = "/api/v1/blobs"
IDEMPOTENCY_WINDOW = timedelta(hours=24)


@dataclass(frozen=True, slots=True)
class UploadTarget:
    name: str
    role: str
    method: str
    url: str
    headers: dict[str, str]
    expires_at: datetime


@dataclass(frozen=True, slots=True)
class Page:
    items: list[Traceset]
    next_cursor: str | None


def _now() -> datetime:
    return datetime.now(UTC)


def blob_key(traceset_id: str, idx: int) -> str:
    return f"{traceset_id}/{idx}"


def encode_cursor(seq: int) -> str:
    return base64.urlsafe_b64encode(f"v1:{seq}".encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> int:
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        text = ""
    version, _, seq = text.partition(":")
    if version != "v1" or not seq.isdigit() or len(seq) > 19:
        raise InvalidRequest.of(
            [
                Problem(
                    "cursor",
                    cursor,
                    "cursor is not one this service handed out; use nextCursor as given",
                )
            ]
        )
    return int(seq)


def parse_body(body: bytes) -> JsonValue:
    try:
        return jsontext.loads(body)
    except jsontext.JsonError as exc:
        raise InvalidRequest.of([Problem("", None, str(exc))]) from None


def _not_found(traceset_id: str) -> NotFound:
    return NotFound.of([Problem("id", traceset_id, f"No traceset {traceset_id} in this workspace")])


class TracesetService:
    def __init__(
        self,
        db: Database,
        store: LocalBlobStore,
        signer: URLSigner,
        *,
        upload_ttl: int,
        download_ttl: int,
    ) -> None:
        self.db = db
        self.store = store
        self.signer = signer
        self.upload_ttl = upload_ttl
        self.download_ttl = download_ttl

    # -- create ---------------------------------------------------------------------

    def create_upload(
        self, workspace: str, body: bytes, base_url: str, idempotency_key: str | None = None
    ) -> tuple[Traceset, list[UploadTarget]]:
        """Check a raw upload-url body and store the pending traceset; nothing on failure.

        With an Idempotency-Key, the same key and body within 24 hours answer the traceset
        the first request made (with fresh URLs); the same key with another body is 422.
        """
        request = read_upload_request(parse_body(body))
        body_sha256 = hashlib.sha256(body).hexdigest()
        for attempt in range(2):
            try:
                with self.db.write() as conn:
                    if idempotency_key is not None:
                        earlier = self._earlier_answer(
                            conn, workspace, idempotency_key, body_sha256
                        )
                        if earlier is not None:
                            return earlier, self._upload_targets(earlier, base_url)
                    traceset_id = uuid.uuid4().hex
                    now = _now()
                    queries.insert_traceset(
                        conn, workspace=workspace, traceset_id=traceset_id, request=request, now=now
                    )
                    if idempotency_key is not None:
                        queries.insert_idempotency_key(
                            conn,
                            workspace=workspace,
                            key=idempotency_key,
                            request_sha256=body_sha256,
                            traceset_id=traceset_id,
                            now=now,
                        )
                    traceset = queries.get_traceset(
                        conn, workspace=workspace, traceset_id=traceset_id
                    )
            except IntegrityError:
                # A concurrent request with the same key won; the retry answers what it made.
                if idempotency_key is None or attempt == 1:
                    raise
                continue
            assert traceset is not None
            return traceset, self._upload_targets(traceset, base_url)
        raise AssertionError("unreachable")

    def _earlier_answer(
        self, conn: Connection, workspace: str, key: str, body_sha256: str
    ) -> Traceset | None:
        since = _now() - IDEMPOTENCY_WINDOW
        earlier = queries.find_idempotency_key(conn, workspace=workspace, key=key, since=since)
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

    def _upload_targets(self, traceset: Traceset, base_url: str) -> list[UploadTarget]:
        return [self._upload_target(traceset, f, base_url) for f in traceset.files]

    def _upload_target(self, traceset: Traceset, file: StoredFile, base_url: str) -> UploadTarget:
        key = blob_key(traceset.id, file.idx)
        query, expires = self.signer.query("PUT", key, self.upload_ttl)
        return UploadTarget(
            name=file.name,
            role=file.role,
            method="PUT",
            url=f"{base_url}{BLOB_ROUTE}/{key}?{query}",
            headers={},
            expires_at=datetime.fromtimestamp(expires, UTC),
        )

    # -- receive (signed URL, no bearer token) -----------------------------------------

    def _signed_file(
        self, method: str, traceset_id: str, idx: int, expires: str | None, signature: str | None
    ) -> tuple[Traceset, StoredFile]:
        key = blob_key(traceset_id, idx)
        why = self.signer.verify("PUT" if method == "PUT" else "GET", key, expires, signature)
        if why is not None:
            raise Forbidden.of([Problem("signature", signature, why)])
        with self.db.read() as conn:
            traceset = queries.get_traceset(conn, workspace=None, traceset_id=traceset_id)
        file = traceset.file_at(idx) if traceset is not None else None
        if traceset is None or file is None:
            raise NotFound.of([Problem("url", key, "This file's traceset no longer exists")])
        return traceset, file

    async def receive_file(
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
        key = blob_key(traceset_id, idx)
        if traceset.status != "pending":
            # Complete: the same bytes again are harmless (checked, then dropped), others refused.
            await self.store.receive(None, chunks, size=file.size, sha256=file.sha256)
            return
        received = await self.store.receive(
            key, chunks, size=file.size, sha256=file.sha256_declared
        )
        await asyncio.to_thread(self._record_received, traceset, idx, received.sha256)

    def _record_received(self, traceset: Traceset, idx: int, sha256: str) -> None:
        key = blob_key(traceset.id, idx)
        with self.db.write() as conn:
            if queries.get_traceset(conn, workspace=None, traceset_id=traceset.id) is None:
                self.store.delete(key)  # deleted while the bytes were arriving
                raise NotFound.of([Problem("url", key, "This file's traceset no longer exists")])
            queries.mark_received(conn, seq=traceset.seq, idx=idx, sha256=sha256, now=_now())

    # -- complete, read, list -----------------------------------------------------------

    def complete(self, workspace: str, traceset_id: str) -> Traceset:
        with self.db.write() as conn:
            traceset = queries.get_traceset(
                conn, workspace=workspace, traceset_id=traceset_id, for_update=True
            )
            if traceset is None:
                raise _not_found(traceset_id)
            if traceset.status != "pending":
                return traceset
            missing = [
                Problem(f"files[{f.idx}]", f.name, f"{f.name} has not been received")
                for f in traceset.files
                if not f.received or self.store.size_of(blob_key(traceset.id, f.idx)) != f.size
            ]
            if missing:
                raise Conflict.of(missing)
            queries.set_status(conn, seq=traceset.seq, status="ready", now=_now())
            done = queries.get_traceset(conn, workspace=workspace, traceset_id=traceset_id)
        assert done is not None
        return done

    def get(self, workspace: str, traceset_id: str) -> Traceset:
        with self.db.read() as conn:
            traceset = queries.get_traceset(conn, workspace=workspace, traceset_id=traceset_id)
        if traceset is None:
            raise _not_found(traceset_id)
        return traceset

    def list_page(
        self, workspace: str, where: ListFilter, *, limit: int, cursor: str | None
    ) -> Page:
        before = decode_cursor(cursor) if cursor is not None else None
        with self.db.read() as conn:
            items = queries.list_tracesets(
                conn, workspace=workspace, where=where, limit=limit + 1, before_seq=before
            )
        if len(items) > limit:
            return Page(items[:limit], encode_cursor(items[limit - 1].seq))
        return Page(items, None)

    # -- promote ----------------------------------------------------------------------

    def promote(self, workspace: str, traceset_id: str, body: bytes) -> tuple[Traceset, list[str]]:
        """Check the new (or stored) metadata with every promotion rule; all or nothing."""
        parsed = parse_body(body) if body.strip() else {}
        if not isinstance(parsed, dict):
            raise InvalidRequest.of([Problem("", parsed, "The request body must be a JSON object")])
        unknown = [
            Problem(name, value, f"{name} is not a member of a promotion request")
            for name, value in parsed.items()
            if name != "workloadMetadata"
        ]
        if unknown:
            raise InvalidRequest.of(unknown)
        with self.db.write() as conn:
            traceset = queries.get_traceset(
                conn, workspace=workspace, traceset_id=traceset_id, for_update=True
            )
            if traceset is None:
                raise _not_found(traceset_id)
            if traceset.status not in ("ready", "promoted"):
                raise Conflict.of(
                    [
                        Problem(
                            "status",
                            traceset.status,
                            f"Only a ready or promoted traceset can be promoted; this one is "
                            f"{traceset.status}: complete its upload first",
                        )
                    ]
                )
            # JSON null is absent: {"workloadMetadata": null} checks the stored object.
            metadata = parsed.get("workloadMetadata")
            if metadata is None and traceset.workload_metadata is not None:
                metadata = jsontext.loads(traceset.workload_metadata)
            check = promotion.check_promotion(
                metadata,
                stored_rank_count=traceset.rank_count,
                has_primary_files=any(f.role == "primary" for f in traceset.files),
            )
            if check.problems:
                raise InvalidRequest.of(check.problems)
            queries.promote(conn, seq=traceset.seq, workload_metadata=check.serialized, now=_now())
            promoted = queries.get_traceset(conn, workspace=workspace, traceset_id=traceset_id)
        assert promoted is not None
        return promoted, check.warnings

    # -- download, delete ---------------------------------------------------------------

    def download_url(self, workspace: str, traceset_id: str, name: str, base_url: str) -> str:
        traceset = self.get(workspace, traceset_id)
        file = traceset.file_named(name)
        if file is None:
            raise NotFound.of(
                [Problem("name", name, f"Traceset {traceset_id} has no file named {name}")]
            )
        if not file.received:
            raise Conflict.of([Problem("name", name, f"{name} has not been received yet")])
        key = blob_key(traceset.id, file.idx)
        query, _ = self.signer.query("GET", key, self.download_ttl)
        return f"{base_url}{BLOB_ROUTE}/{key}?{query}"

    def signed_download(
        self, traceset_id: str, idx: int, *, expires: str | None, signature: str | None
    ) -> tuple[StoredFile, str]:
        """The file a signed download URL names and its blob key, once the URL checks out."""
        _, file = self._signed_file("GET", traceset_id, idx, expires, signature)
        if not file.received:
            raise NotFound.of([Problem("url", file.name, f"{file.name} has not been received")])
        return file, blob_key(traceset_id, idx)

    def delete(self, workspace: str, traceset_id: str) -> None:
        with self.db.write() as conn:
            traceset = queries.get_traceset(conn, workspace=workspace, traceset_id=traceset_id)
            if traceset is None:
                raise _not_found(traceset_id)
            queries.delete_traceset(conn, seq=traceset.seq)
        # After the commit: a crash here leaves only unreachable bytes, never a
        # traceset whose files are gone.
        self.store.delete_prefix(traceset_id)
