"""What a traceset's files still need: the upload status, and an upload entry (the
store's plan: a URL, or a URL per part) for every file not whole in the store.

Declaring files (``uploads``) and asking what is missing (the upload status, a resume)
answer through the same ``_targets``, so a file's entry cannot differ between them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from tracesets.db import file_rows, queries
from tracesets.records import StoredFile, TracesetHead
from tracesets.service.core import ServiceCore, not_found
from tracesets.service.cursors import CursorKind, decode_cursor
from tracesets.storage.base import UploadPlan, blob_key
from tracesets.uploadrequest import (
    PartDigests,
)


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


class Targets(ServiceCore):
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
        start = decode_cursor(cursor, CursorKind.UPLOADS) if cursor is not None else 0
        with self.db.read() as conn:  # a page's files only, however many the traceset holds
            traceset = queries.get_head(conn, workspace=workspace, traceset_id=traceset_id)
            if traceset is None:
                raise not_found(traceset_id)
            files = file_rows.files_from(
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
                    file_rows.set_upload(
                        conn, seq=seq, idx=idx, upload_id=plan.upload_id, part_size=plan.part_size
                    )
        return received, uploads, next_idx
