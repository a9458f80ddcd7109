"""The use cases: create an upload, follow and complete it, read, list, promote, delete.

No HTTP here, and no knowledge of where bytes live: routes parse and render, the
``BlobStore`` holds the files, this module decides. Every use case that reads, checks
and writes does so in one transaction, so a failure changes nothing. Calls to the
store that can take long (finishing a multipart upload, reading an object back) run
outside database transactions, so they hold no lock.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import logging
import posixpath
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Final

from sqlalchemy import Connection
from sqlalchemy.exc import IntegrityError

from tracesets import jsontext, promotion, workload
from tracesets.db import queries
from tracesets.db.engine import Database
from tracesets.jsontext import JsonValue
from tracesets.problems import Conflict, InvalidRequest, NotFound, Problem, Unprocessable
from tracesets.records import Checked, ListedTraceset, StoredFile, Traceset, TracesetHead
from tracesets.service import tokens
from tracesets.service.inspections import inspection_warnings
from tracesets.storage.base import BlobStore, UploadIncomplete, UploadPlan, blob_key
from tracesets.uploadrequest import (
    FileSpec,
    PartDigests,
    UploadRequest,
    read_file_additions,
    read_upload_request,
)
from tracesets.vocabulary import (
    FILES_PAGE_MAX,
    MAX_FILES_PER_REQUEST,
    MAX_FILES_PER_TRACESET,
    MAX_METADATA_BYTES,
    ListFilter,
)

IDEMPOTENCY_WINDOW = timedelta(hours=24)
#: Files read for an answer about a traceset: a page, and one to know whether more follow.
ANSWER_FILES: Final = FILES_PAGE_MAX + 1
#: Rounds of complete's check-then-commit while uploads keep replacing files.
_COMPLETE_ATTEMPTS = 3
log = logging.getLogger("tracesets")


@dataclass(frozen=True, slots=True)
class UploadTarget:
    """Where one file goes: a plan of the store, with the file it is for."""

    name: str
    role: str
    plan: UploadPlan
    idx: int = 0  # the file's index in its traceset


@dataclass(frozen=True, slots=True)
class UploadStatus:
    traceset: TracesetHead
    received: list[str]
    uploads: list[UploadTarget]
    next_idx: int | None = None  # the first file not in this page, if any


#: A page of upload status stops once its names and signed URLs pass this many bytes
#: (a multipart file on S3 may hold 1,000 part URLs).
UPLOAD_STATUS_PAGE_BYTES: Final = 4 * 1024 * 1024


def _plan_bytes(name: str, plan: UploadPlan | None) -> int:
    """About what one file adds to an upload status answer: its name, its URLs."""
    size = 6 * len(name.encode()) + 200  # a name escaped at worst, and the entry's members
    if plan is not None:
        size += len(plan.url or "") + sum(len(k) + len(v) + 6 for k, v in plan.headers.items())
        for part in plan.parts or ():
            size += len(part.url) + 100 + sum(len(k) + len(v) + 6 for k, v in part.headers.items())
    return size


@dataclass(frozen=True, slots=True)
class Page:
    items: list[ListedTraceset]
    next_cursor: str | None


def _now() -> datetime:
    return datetime.now(UTC)


def encode_cursor(seq: int) -> str:
    return base64.urlsafe_b64encode(f"v1:{seq}".encode()).decode().rstrip("=")


def encode_file_cursor(idx: int) -> str:
    """The cursor of a files page that starts at the file of index ``idx``."""
    return base64.urlsafe_b64encode(f"f1:{idx}".encode()).decode().rstrip("=")


def decode_cursor(cursor: str, version_wanted: str = "v1") -> int:
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        text = ""
    version, _, seq = text.partition(":")
    if version != version_wanted or not (seq.isascii() and seq.isdigit()) or len(seq) > 19:
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


def _refuse_redeclared(specs: list[FileSpec], earlier: dict[str, StoredFile]) -> None:
    """A name the traceset holds may be declared again only exactly as it was."""
    conflicts = [
        Problem(
            f"files[{index}].name",
            spec.name,
            f'files[{index}].name "{spec.name}" is already in this traceset with another '
            f"size, role or sha256",
        )
        for index, spec in enumerate(specs)
        if (stored := earlier.get(spec.name)) is not None
        and (stored.size, stored.role, stored.sha256_declared)
        != (spec.size, spec.role, spec.sha256)
    ]
    if conflicts:
        raise Conflict.of(conflicts)


def _base64_sha256(hex_digest: str) -> str:
    """A SHA-256 as S3 writes its checksums."""
    return base64.b64encode(bytes.fromhex(hex_digest)).decode()


def _targets(traceset: Traceset, plans: list[UploadPlan]) -> list[UploadTarget]:
    return [
        UploadTarget(f.name, f.role, plan, f.idx)
        for f, plan in zip(traceset.files, plans, strict=True)
    ]


@dataclass(frozen=True, slots=True)
class Limits:
    """What a traceset may hold (settings; the vocabulary's limits are the ceilings)."""

    max_files: int = MAX_FILES_PER_TRACESET
    max_metadata_bytes: int = MAX_METADATA_BYTES

    @property
    def files_per_request(self) -> int:
        """Files one upload-url or add-files request declares at most."""
        return min(self.max_files, MAX_FILES_PER_REQUEST)


class TracesetService:
    def __init__(self, db: Database, store: BlobStore, limits: Limits | None = None) -> None:
        self.db = db
        self.store = store
        self.limits = limits or Limits()
        #: Called after a traceset became ready with an inspection queued (from a worker
        #: thread): the process's inspection queue starts on it without waiting to poll.
        self.on_inspection_queued: Callable[[], None] | None = None

    # -- create ---------------------------------------------------------------------

    @property
    def reads_inline(self) -> bool:
        """Whether a read is cheaper run here than on a worker thread: a read of SQLite in
        WAL mode never waits for a writer and takes microseconds, less than the trip."""
        return self.db.is_sqlite

    def authenticate(self, token: str) -> tokens.Caller | None:
        return tokens.authenticate(self.db, token)

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
        traceset_id = uuid.uuid4().hex
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
        return traceset, _targets(traceset, plans)

    async def create_upload_on_loop(
        self, workspace: str, body: bytes, base_url: str
    ) -> tuple[Traceset, list[UploadTarget]]:
        """``create_upload`` without an Idempotency-Key, for a caller on the event loop.

        The checks run on the loop (tens of microseconds) and only the commit is awaited,
        so a request costs no worker thread. Only for a store whose plans need no I/O
        (local files: an HMAC each); S3's may start multipart uploads.
        """
        request = self._read_upload(body)
        traceset_id = uuid.uuid4().hex
        plans = self._plans(traceset_id, request, base_url)
        body_sha256 = hashlib.sha256(body).hexdigest()
        insert = self._inserter(workspace, traceset_id, request, plans, body_sha256, None)
        try:
            traceset = await self.db.write_async(insert)
        except BaseException:
            self._abort(traceset_id, plans)
            raise
        return traceset, _targets(traceset, plans)

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
            now = _now()
            traceset = queries.insert_traceset(
                conn,
                workspace=workspace,
                traceset_id=traceset_id,
                request=request,
                uploads=[(p.upload_id, p.part_size) for p in plans],
                now=now,
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
            return traceset

        return insert

    def _abort(self, traceset_id: str, plans: list[UploadPlan]) -> None:
        for idx, plan in enumerate(plans):
            if plan.upload_id is not None:
                self.store.abort_upload(blob_key(traceset_id, idx), plan.upload_id)

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

    # -- follow and complete an upload ---------------------------------------------------

    def _resume(self, traceset: Traceset, base_url: str) -> list[UploadTarget]:
        """Fresh URLs for whatever has not arrived; records new multipart uploads."""
        return self.upload_status(traceset.workspace, traceset.id, base_url).uploads

    def upload_status(
        self,
        workspace: str,
        traceset_id: str,
        base_url: str,
        *,
        with_urls: bool = True,
        cursor: str | None = None,
        limit: int | None = None,
    ) -> UploadStatus:
        """What has arrived, and fresh URLs for the rest (only the missing parts).

        With a ``limit``, one page: files in index order from the cursor on, at most
        ``limit`` of them and about ``UPLOAD_STATUS_PAGE_BYTES`` of names and URLs.
        Without ``with_urls`` (a caller who may not upload) only what has arrived, and
        nothing is started or recorded in the store.
        """
        start = decode_cursor(cursor, "f1") if cursor is not None else 0
        with self.db.read() as conn:  # a page's files only, however many the traceset holds
            traceset = queries.get_head(conn, workspace=workspace, traceset_id=traceset_id)
            if traceset is None:
                raise _not_found(traceset_id)
            files = queries.files_from(
                conn, seq=traceset.seq, start=start, limit=None if limit is None else limit + 1
            )
        if traceset.status != "pending" or not with_urls:
            page = files if limit is None else files[:limit]
            following = files[len(page)].idx if len(page) < len(files) else None
            arrived = [
                f.name for f in page if traceset.status != "pending" or self._arrived(traceset, f)
            ]
            return UploadStatus(traceset, arrived, [], following)
        received, uploads, next_idx = self._targets(
            traceset.id, traceset.seq, files, base_url, limit=limit
        )
        return UploadStatus(traceset, received, uploads, next_idx)

    def _arrived(self, traceset: TracesetHead, f: StoredFile) -> bool:
        return self.store.arrived(
            blob_key(traceset.id, f.idx),
            size=f.size,
            sha256=f.expected_sha256,
            upload_id=f.upload_id,
            part_size=f.part_size,
        )

    def _targets(
        self,
        traceset_id: str,
        seq: int,
        stored: list[StoredFile],
        base_url: str,
        new: Mapping[int, PartDigests | None] | None = None,
        *,
        limit: int | None = None,
    ) -> tuple[list[str], list[UploadTarget], int | None]:
        """Of ``stored``: the names whose bytes are all in the store, an upload entry for
        every other file, and the index a next page starts at (with a ``limit``, or past
        about ``UPLOAD_STATUS_PAGE_BYTES``). Files of index in ``new`` were just declared
        (with their part digests, if any): the store is not asked what it holds of them. A
        multipart upload started here is recorded."""
        new = new or {}
        received: list[str] = []
        uploads: list[UploadTarget] = []
        restarted: list[tuple[int, UploadPlan]] = []
        used = 0
        next_idx: int | None = None
        for f in stored:
            if limit is not None and len(received) + len(uploads) == limit:
                next_idx = f.idx
                break
            key = blob_key(traceset_id, f.idx)
            plan = (
                self.store.plan_upload(
                    key,
                    size=f.size,
                    sha256=f.expected_sha256,
                    base_url=base_url,
                    parts=new[f.idx],
                )
                if f.idx in new
                else self.store.resume_upload(
                    key,
                    size=f.size,
                    sha256=f.expected_sha256,
                    upload_id=f.upload_id,
                    part_size=f.part_size,
                    base_url=base_url,
                )
            )
            if plan is not None and plan.upload_id != f.upload_id:
                restarted.append((f.idx, plan))  # kept even when cut: the next page lists it
            used += _plan_bytes(f.name, plan)
            if limit is not None and (received or uploads) and used > UPLOAD_STATUS_PAGE_BYTES:
                next_idx = f.idx
                break
            if plan is None:
                received.append(f.name)
            else:
                uploads.append(UploadTarget(f.name, f.role, plan, f.idx))
        if restarted:
            with self.db.write() as conn:
                for idx, plan in restarted:
                    queries.set_upload(
                        conn, seq=seq, idx=idx, upload_id=plan.upload_id, part_size=plan.part_size
                    )
        return received, uploads, next_idx

    def add_files(
        self, workspace: str, traceset_id: str, body: bytes, base_url: str
    ) -> list[UploadTarget]:
        """Declare more files of a pending traceset and answer an upload entry for each.

        A file declared again exactly as before (a retried rank) is answered again, its
        missing bytes only; one whose bytes have all arrived has nothing left to send and
        gets no entry. Indices are taken under the traceset's lock, so any number of
        concurrent requests each get their own.
        """
        parsed = parse_body(body)
        with self.db.read() as conn:  # another workspace's traceset is 404 whatever the body
            if queries.traceset_state(conn, workspace=workspace, traceset_id=traceset_id) is None:
                raise _not_found(traceset_id)
        specs = read_file_additions(parsed, max_files=self.limits.files_per_request)

        def add(conn: Connection) -> tuple[int, list[StoredFile], dict[int, PartDigests | None]]:
            locked = queries.traceset_state(
                conn, workspace=workspace, traceset_id=traceset_id, lock=True
            )
            if locked is None:
                raise _not_found(traceset_id)
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
            earlier = queries.files_named(conn, seq=seq, names=[f.name for f in specs])
            _refuse_redeclared(specs, earlier)
            new = [f for f in specs if f.name not in earlier]
            first = queries.file_count(conn, seq=seq)
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
            added = {
                f.name: f for f in queries.insert_files(conn, seq=seq, specs=new, first_idx=first)
            }
            stored = [earlier.get(f.name) or added[f.name] for f in specs]
            parts = {f.name: f.parts for f in specs}
            return seq, stored, {f.idx: parts[f.name] for f in added.values()}

        seq, stored, new = self.db.write_soon(add)
        return self._targets(traceset_id, seq, stored, base_url, new)[1]

    def complete(self, workspace: str, traceset_id: str) -> Traceset:
        """Check every file in the store, then make the traceset ready with exactly the
        bytes checked: if a file changed in between (a PUT landed), check again."""
        for _ in range(_COMPLETE_ATTEMPTS):
            traceset = self.get(workspace, traceset_id)
            if traceset.status != "pending":
                return traceset
            done = self._mark_ready(workspace, traceset_id, self._finished(traceset))
            if done is not None:
                return done
        raise Conflict.of(
            [
                Problem(
                    "files",
                    traceset_id,
                    "Files kept arriving while the upload was being completed; complete it "
                    "again once every upload has ended",
                )
            ]
        )

    def _finished(self, traceset: Traceset) -> dict[int, Checked]:
        """How the store found each file whole; Conflict naming every file not whole."""
        digests: dict[int, Checked] = {}
        missing: list[Problem] = []
        checked = self.store.checked_at_upload(traceset.id)
        for f in traceset.files:
            key = blob_key(traceset.id, f.idx)
            # Sent in one PUT (no upload id) whose URL signed the declared digest.
            if f.upload_id is None and f.sha256_declared and checked.get(key) == f.size:
                digests[f.idx] = Checked(
                    f.sha256_declared, "s3-sha256", _base64_sha256(f.sha256_declared)
                )
                continue
            try:
                digests[f.idx] = self.store.finish_upload(
                    key, size=f.size, sha256=f.expected_sha256, upload_id=f.upload_id
                )
            except UploadIncomplete as why:
                missing.append(Problem(f"files[{f.idx}]", f.name, f"{f.name} {why}"))
        if missing:
            raise Conflict.of(missing)
        if checked:
            log.info("checked %d files of %s from the store's listing", len(checked), traceset.id)
        return digests

    def _mark_ready(
        self, workspace: str, traceset_id: str, digests: dict[int, Checked]
    ) -> Traceset | None:
        """Ready with ``digests``, in one transaction holding the traceset's row (a PUT
        takes it too); None if a file's recorded digest changed since they were read."""
        now = _now()

        def ready_row(conn: Connection) -> tuple[Traceset | None, bool, bool]:
            """The traceset after, whether its files were adopted, whether it was queued."""
            queued = adopted = False
            current = queries.get_traceset(
                conn, workspace=workspace, traceset_id=traceset_id, for_update=True
            )
            if current is None:
                raise _not_found(traceset_id)
            if current.status == "pending":
                # Files declared while the others were being checked have not been.
                late = [f for f in current.files if f.idx not in digests]
                if late:
                    raise Conflict.of(
                        [
                            Problem(f"files[{f.idx}]", f.name, f"{f.name} has not been received")
                            for f in late
                        ]
                    )
                if any(f.sha256 not in (None, digests[f.idx].sha256) for f in current.files):
                    return None, False, False
                queries.mark_all_received(conn, seq=current.seq, checked=digests, now=now)
                queries.set_status(conn, seq=current.seq, status="ready", now=now)
                adopted = True
                if any(f.role == "primary" for f in current.files):
                    queries.queue_inspection(conn, seq=current.seq)
                    queued = True
            done = queries.get_traceset(
                conn, workspace=workspace, traceset_id=traceset_id, files_limit=ANSWER_FILES
            )
            assert done is not None
            return done, adopted, queued

        done, adopted, queued = self.db.write_soon(ready_row)  # committed with others' writes
        if done is None:
            return None
        if adopted:
            # After the commit: from now on no upload can become one of these files.
            self.store.drop_superseded(
                traceset_id,
                {blob_key(traceset_id, idx): c.sha256 for idx, c in digests.items()},
            )
        if queued and self.on_inspection_queued is not None:
            self.on_inspection_queued()
        return done

    # -- read, list -----------------------------------------------------------------------

    def read(self, workspace: str, traceset_id: str) -> Traceset:
        """The traceset as an answer shows it: its first page of files, all of them counted."""
        with self.db.read() as conn:
            traceset = queries.get_traceset(
                conn, workspace=workspace, traceset_id=traceset_id, files_limit=ANSWER_FILES
            )
        if traceset is None:
            raise _not_found(traceset_id)
        return traceset

    def get(self, workspace: str, traceset_id: str) -> Traceset:
        with self.db.read() as conn:
            traceset = queries.get_traceset(conn, workspace=workspace, traceset_id=traceset_id)
        if traceset is None:
            raise _not_found(traceset_id)
        return traceset

    def rank_page(
        self, workspace: str, traceset_id: str, *, limit: int, cursor: str | None
    ) -> tuple[list[str], str | None]:
        """A page of the traceset's per-rank figures (JSON texts) in rank order, and the
        cursor of the next page."""
        after = decode_cursor(cursor) - 1 if cursor is not None else -1
        traceset = self.get(workspace, traceset_id)
        with self.db.read() as conn:
            rows = queries.rank_figures(conn, seq=traceset.seq, after=after, limit=limit + 1)
        if len(rows) > limit:
            return [figures for _, figures in rows[:limit]], encode_cursor(rows[limit - 1][0] + 1)
        return [figures for _, figures in rows], None

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

    def files_from(
        self, workspace: str, traceset_id: str, *, cursor: str | None, limit: int
    ) -> list[StoredFile]:
        """Up to ``limit`` files from the cursor on, in index order (the route cuts the page)."""
        start = decode_cursor(cursor, "f1") if cursor is not None else 0
        with self.db.read() as conn:
            head = queries.get_head(conn, workspace=workspace, traceset_id=traceset_id)
            if head is None:
                raise _not_found(traceset_id)
            return queries.files_from(conn, seq=head.seq, start=start, limit=limit)

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

        def promote_row(conn: Connection) -> tuple[Traceset, promotion.PromotionCheck]:
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
                max_metadata_bytes=self.limits.max_metadata_bytes,
            )
            if check.problems:
                raise InvalidRequest.of(check.problems)
            queries.promote(conn, seq=traceset.seq, workload_metadata=check.serialized, now=_now())
            promoted = queries.get_traceset(
                conn, workspace=workspace, traceset_id=traceset_id, files_limit=ANSWER_FILES
            )
            assert promoted is not None
            return promoted, check

        promoted, check = self.db.write_soon(promote_row)  # committed with others' writes
        # What the traces say against the declaration informs rather than refuses:
        # many frameworks profile only some ranks.
        return promoted, [*check.warnings, *inspection_warnings(promoted)]

    # -- download, delete -------------------------------------------------------------------

    def download_url(self, workspace: str, traceset_id: str, name: str, base_url: str) -> str:
        with self.db.read() as conn:
            found = queries.one_file(conn, traceset_id=traceset_id, workspace=workspace, name=name)
            if found is None and queries.get_status(conn, workspace, traceset_id) is None:
                raise _not_found(traceset_id)
        if found is None:
            raise NotFound.of(
                [Problem("name", name, f"Traceset {traceset_id} has no file named {name}")]
            )
        file = found.file
        if found.status == "pending":
            raise Conflict.of(
                [
                    Problem(
                        "name", name, f"{name} cannot be downloaded before the upload is complete"
                    )
                ]
            )
        return self.store.download_url(
            blob_key(traceset_id, file.idx), filename=posixpath.basename(name), base_url=base_url
        )

    def delete(self, workspace: str, traceset_id: str) -> None:
        with self.db.write() as conn:
            traceset = queries.get_traceset(conn, workspace=workspace, traceset_id=traceset_id)
            if traceset is None:
                raise _not_found(traceset_id)
            queries.delete_traceset(conn, seq=traceset.seq)
        # After the commit: a crash here leaves only unreachable bytes, never a
        # traceset whose files are gone. The sweeper of a restarted process cannot
        # see them; the store's own lifecycle rules can.
        self.store.delete_prefix(traceset_id)

    def sweep_pending(self, older_than: timedelta, *, limit: int = 100) -> int:
        """Abort and remove pending tracesets older than ``older_than``; how many."""
        with self.db.read() as conn:
            stale = queries.pending_before(conn, _now() - older_than, limit)
        for workspace, traceset_id in stale:
            try:
                self.delete(workspace, traceset_id)
            except NotFound:
                continue  # another process swept it first
            log.info("swept abandoned pending traceset %s", traceset_id)
        return len(stale)
