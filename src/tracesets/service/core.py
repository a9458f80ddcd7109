"""What every use case stands on: the service's state, reading one traceset.

No HTTP here, and no knowledge of where bytes live: routes parse and render, the
``BlobStore`` holds the files, the use cases decide. Every use case that reads, checks
and writes does so in one transaction, so a failure changes nothing. Calls to the
store that can take long (finishing a multipart upload, reading an object back) run
outside database transactions, so they hold no lock.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Final

from tracesets import jsontext
from tracesets.db import queries
from tracesets.db.engine import Database
from tracesets.jsontext import JsonValue
from tracesets.problems import InvalidRequest, NotFound, Problem
from tracesets.records import ListedTraceset, Traceset
from tracesets.service import tokens
from tracesets.service.cursors import encode_list_cursor
from tracesets.storage.base import BlobStore
from tracesets.vocabulary import (
    DEFAULT_SORT,
    FILES_PAGE_MAX,
    MAX_FILES_PER_REQUEST,
    MAX_FILES_PER_TRACESET,
    MAX_METADATA_BYTES,
    Sort,
)

#: Files read for an answer about a traceset: a page, and one to know whether more follow.
ANSWER_FILES: Final = FILES_PAGE_MAX + 1


@dataclass(frozen=True, slots=True)
class Page:
    items: list[ListedTraceset]
    next_cursor: str | None
    sort: Sort = DEFAULT_SORT

    def cursor_after(self, item: ListedTraceset) -> str:
        """The cursor of the page that follows ``item`` in this page's order."""
        figure = None if self.sort == DEFAULT_SORT else self.sort.removeprefix("-")
        value = getattr(item.performance, figure) if figure is not None else None
        return encode_list_cursor(self.sort, item.seq, value)


def utcnow() -> datetime:
    return datetime.now(UTC)


def parse_body(body: bytes) -> JsonValue:
    try:
        return jsontext.loads(body)
    except jsontext.JsonError as exc:
        raise InvalidRequest.of([Problem("", None, str(exc))]) from None


def not_found(traceset_id: str) -> NotFound:
    return NotFound.of([Problem("id", traceset_id, f"No traceset {traceset_id} in this workspace")])


@dataclass(frozen=True, slots=True)
class Limits:
    """What a traceset and a workspace may hold (settings; the vocabulary's limits are the
    ceilings)."""

    max_files: int = MAX_FILES_PER_TRACESET
    max_metadata_bytes: int = MAX_METADATA_BYTES
    #: Bytes a workspace may hold, stored or declared (``service.quota``); None: no quota.
    quota_bytes: int | None = None

    @property
    def files_per_request(self) -> int:
        """Files one upload-url or add-files request declares at most."""
        return min(self.max_files, MAX_FILES_PER_REQUEST)


class ServiceCore:
    """The state every use case shares, and reading one traceset."""

    def __init__(self, db: Database, store: BlobStore, limits: Limits | None = None) -> None:
        self.db = db
        self.store = store
        self.limits = limits or Limits()
        #: Called after a traceset became ready with an inspection queued (from a worker
        #: thread): the process's inspection queue starts on it without waiting to poll.
        self.on_inspection_queued: Callable[[], None] | None = None

    @property
    def reads_inline(self) -> bool:
        """Whether a read is cheaper run here than on a worker thread: a read of SQLite in
        WAL mode never waits for a writer and takes microseconds, less than the trip."""
        return self.db.is_sqlite

    def authenticate(self, token: str) -> tokens.Caller | None:
        return tokens.authenticate(self.db, token)

    def read(self, workspace: str, traceset_id: str) -> Traceset:
        """The traceset as an answer shows it: its first page of files, all of them counted."""
        with self.db.read() as conn:
            traceset = queries.get_traceset(
                conn, workspace=workspace, traceset_id=traceset_id, files_limit=ANSWER_FILES
            )
        if traceset is None:
            raise not_found(traceset_id)
        return traceset

    def get(self, workspace: str, traceset_id: str) -> Traceset:
        with self.db.read() as conn:
            traceset = queries.get_traceset(conn, workspace=workspace, traceset_id=traceset_id)
        if traceset is None:
            raise not_found(traceset_id)
        return traceset
