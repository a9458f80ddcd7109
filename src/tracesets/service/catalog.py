"""The use cases on tracesets: create and complete (``uploads``, ``completion``), read,
list, promote, download, delete."""

from __future__ import annotations

import logging
import posixpath
from dataclasses import replace
from datetime import timedelta
from functools import cached_property
from typing import Final

import orjson
from sqlalchemy import Connection

from tracesets import jsontext, promotion
from tracesets.db import file_rows, listing, queries
from tracesets.problems import Conflict, InvalidRequest, NotFound, Problem
from tracesets.records import StoredFile, Traceset
from tracesets.service.comparisons import Comparisons
from tracesets.service.completion import Completion
from tracesets.service.core import (
    ANSWER_FILES,
    Page,
    not_found,
    parse_body,
    utcnow,
)
from tracesets.service.cursors import (
    CursorKind,
    decode_cursor,
    decode_list_cursor,
    encode_cursor,
)
from tracesets.service.joined import FAILURE_PREFIX
from tracesets.service.orphans import OrphanSweep
from tracesets.service.quota import Usage, read_usage
from tracesets.service.uploads import Uploads
from tracesets.storage.base import blob_key
from tracesets.vocabulary import DEFAULT_SORT, ListFilter, Sort

log = logging.getLogger("tracesets")


#: Promotion's warning while the traces are still being read: their disagreements, if
#: any, are not among the warnings yet.
NOT_FINISHED: Final = (
    "The traces' inspection has not finished, so what they say against the declared rank "
    "count is not among these warnings; read the traceset again once inspection.status is "
    "done (the Python client's wait_for_inspection does)."
)


#: Promotion's warning when the traces could not be inspected (the store failed to give
#: their bytes, every attempt): what they say is not among the warnings, and never will be.
FAILED: Final = (
    "The traces' inspection failed, so what they say against the declared rank count is "
    "not among these warnings: {why}"
)
#: The most of the failure's reason FAILED quotes: a store's error can be long.
WHY_CHARS: Final = 300
#: A page of per-rank figures stops before its JSON passes this many bytes: a rank's
#: figures hold 21 kernel names of up to 4,096 characters (24 KiB each once escaped).
RANK_PAGE_BYTES: Final = 4 * 1024 * 1024


def inspection_warnings(traceset: Traceset) -> list[str]:
    """The disagreements a finished inspection found (for promotion's warnings), or that
    it has not finished, or that it failed and why."""
    inspection = traceset.inspection
    if inspection is not None and inspection.status in ("pending", "running"):
        return [NOT_FINISHED]
    if inspection is not None and inspection.status == "failed":
        return [FAILED.format(why=_failure(inspection.result))]
    if inspection is None or inspection.status != "done" or inspection.result is None:
        return []
    warnings: list[str] = orjson.loads(inspection.result)["warnings"]
    return warnings


def _failure(result: bytes | None) -> str:
    """The reason a failed inspection recorded, briefly."""
    stored: list[str] = orjson.loads(result)["warnings"] if result is not None else []
    why = "; ".join(w.removeprefix(FAILURE_PREFIX) for w in stored) or "no reason recorded"
    return why if len(why) <= WHY_CHARS else why[: WHY_CHARS - 1] + "…"


def rank_page_of(rows: list[tuple[int, str]], limit: int) -> tuple[list[str], str | None]:
    """The figures of ``rows`` (position, JSON; up to ``limit`` + 1 of them) a page holds:
    ``limit`` of them, fewer when their JSON would pass ``RANK_PAGE_BYTES`` (at least one),
    and the cursor of the first one left out."""
    kept: list[str] = []
    used = 0
    for position, figures in rows[:limit]:
        used += len(figures.encode()) + 1
        if kept and used > RANK_PAGE_BYTES:
            return kept, encode_cursor(CursorKind.RANKS, position)
        kept.append(figures)
    if len(rows) > limit:
        return kept, encode_cursor(CursorKind.RANKS, rows[limit - 1][0] + 1)
    return kept, None


class TracesetService(Uploads, Completion, Comparisons):
    """Every use case on tracesets, one object the routes hold."""

    def rank_page(
        self, workspace: str, traceset_id: str, *, limit: int, cursor: str | None
    ) -> tuple[list[str], str | None]:
        """A page of the traceset's per-rank figures (JSON texts) in rank order, and the
        cursor of the next page."""
        after = decode_cursor(cursor, CursorKind.RANKS) - 1 if cursor is not None else -1
        traceset = self.get(workspace, traceset_id)
        with self.db.read() as conn:
            rows = queries.rank_figures(conn, seq=traceset.seq, after=after, limit=limit + 1)
        return rank_page_of(rows, limit)

    def list_page(
        self,
        workspace: str,
        where: ListFilter,
        *,
        limit: int,
        cursor: str | None,
        sort: Sort = DEFAULT_SORT,
    ) -> Page:
        after, before = decode_list_cursor(cursor, sort) if cursor is not None else (None, None)
        with self.db.read() as conn:
            items = listing.list_tracesets(
                conn,
                workspace=workspace,
                where=where,
                limit=limit + 1,
                before_seq=before,
                sort=sort,
                after_figure=after,
            )
        if len(items) > limit:
            page = Page(items[:limit], None, sort)
            return replace(page, next_cursor=page.cursor_after(page.items[-1]))
        return Page(items, None, sort)

    def usage(self, workspace: str) -> Usage:
        """The workspace's tracesets, files and bytes, summed by the database."""
        with self.db.read() as conn:
            return read_usage(conn, workspace, self.limits.quota_bytes)

    def files_from(
        self, workspace: str, traceset_id: str, *, cursor: str | None, limit: int
    ) -> list[StoredFile]:
        """Up to ``limit`` files from the cursor on, in index order (the route cuts the page)."""
        start = decode_cursor(cursor, CursorKind.FILES) if cursor is not None else 0
        with self.db.read() as conn:
            head = queries.get_head(conn, workspace=workspace, traceset_id=traceset_id)
            if head is None:
                raise not_found(traceset_id)
            return file_rows.files_from(conn, seq=head.seq, start=start, limit=limit)

    async def promote(
        self, workspace: str, traceset_id: str, body: bytes
    ) -> tuple[Traceset, list[str]]:
        """Check the new (or stored) metadata with every promotion rule; all or nothing.

        For a caller on the event loop: the body is read here, the rules run in the
        transaction, and the loop awaits its commit (``write_async``), so a promotion
        holds no worker thread while it waits its turn to write.
        """
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
                raise not_found(traceset_id)
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
            queries.promote(
                conn, seq=traceset.seq, workload_metadata=check.serialized, now=utcnow()
            )
            promoted = queries.get_traceset(
                conn, workspace=workspace, traceset_id=traceset_id, files_limit=ANSWER_FILES
            )
            assert promoted is not None
            return promoted, check

        promoted, check = await self.db.write_async(promote_row)  # committed with others' writes
        # What the traces say against the declaration informs rather than refuses:
        # many frameworks profile only some ranks.
        return promoted, [*check.warnings, *inspection_warnings(promoted)]

    def download_url(self, workspace: str, traceset_id: str, name: str, base_url: str) -> str:
        found = file_rows.one_file(self.db, traceset_id=traceset_id, workspace=workspace, name=name)
        if found is None:
            with self.db.read() as conn:
                if queries.get_status(conn, workspace, traceset_id) is None:
                    raise not_found(traceset_id)
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
            # The traceset's row first, as every writer takes it (a PUT, complete, the
            # inspection's recorder): its files and inspection rows after, never before.
            state = queries.traceset_state(
                conn, workspace=workspace, traceset_id=traceset_id, lock=True
            )
            if state is None:
                raise not_found(traceset_id)
            queries.delete_traceset(conn, seq=state[0])
        # After the commit: a crash here leaves only unreachable bytes, never a
        # traceset whose files are gone; in a bucket, the sweep of objects without rows
        # takes them (service.orphans).
        self.store.delete_prefix(traceset_id)

    def sweep_pending(self, older_than: timedelta, *, limit: int = 100) -> int:
        """Abort and remove pending tracesets older than ``older_than``; how many."""
        with self.db.read() as conn:
            stale = queries.pending_before(conn, utcnow() - older_than, limit)
        for workspace, traceset_id in stale:
            try:
                self.delete(workspace, traceset_id)
            except NotFound:
                continue  # another process swept it first
            log.info(
                "swept abandoned pending traceset %s",
                traceset_id,
                extra={"event": "traceset.swept", "traceset_id": traceset_id},
            )
        return len(stale)

    @cached_property
    def orphans(self) -> OrphanSweep:
        return OrphanSweep(self.db, self.store)
