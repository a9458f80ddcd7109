"""Records to JSON bytes. Stored metadata goes out as stored, never re-encoded.

Answers about tracesets are bounded whatever was uploaded: a list item counts its files
instead of listing them, and a page of the list stops at ``LIST_PAGE_BYTES``; one
traceset's answer lists its files up to a page (``FILES_PAGE_LIMIT`` files or
``FILES_PAGE_BYTES`` of their JSON, whichever comes first) and names the cursor of the
rest; an inspection's lists are cut past ``INSPECTION_LIST_BYTES`` each.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, Final

import orjson
from fastapi import Response

from tracesets import jsontext
from tracesets.api.observe import note
from tracesets.inspection.report import empty_json
from tracesets.problems import Problem, TracesetsError
from tracesets.records import InspectionRecord, ListedTraceset, StoredFile, Traceset, TracesetHead
from tracesets.service.core import Page
from tracesets.service.cursors import CursorKind, encode_cursor
from tracesets.service.targets import UploadStatus, UploadTarget
from tracesets.vocabulary import FILES_PAGE_MAX

#: Most files in one page: the files route's largest ``limit``, and what GET embeds.
FILES_PAGE_LIMIT: Final = FILES_PAGE_MAX
#: A page of files stops before its JSON passes this many bytes (names of 1,024
#: control characters are 6 KiB each once escaped).
FILES_PAGE_BYTES: Final = 2 * 1024 * 1024
#: A page of the list stops before its JSON passes this many bytes (each item may hold
#: 64 KiB of metadata and a 16,384-character description).
LIST_PAGE_BYTES: Final = 4 * 1024 * 1024
#: An upload-url or add-files answer stops its upload entries before their JSON passes this
#: many bytes: S3 signs a URL per part (a file in 1,000 parts is some 700 KB of them), and
#: 10,000 presigned URLs with their checksum headers are about 9 MB.
UPLOAD_ANSWER_BYTES: Final = 4 * 1024 * 1024
#: An inspection whose stored JSON is at most this long goes out as stored.
INSPECTION_EMBED_BYTES: Final = 2 * 1024 * 1024
#: Past that, each of its lists keeps its first items up to this many bytes of JSON.
INSPECTION_LIST_BYTES: Final = 256 * 1024

PROBLEM_JSON = "application/problem+json"


def timestamp(value: datetime | None) -> str | None:
    """RFC 3339 in UTC to the millisecond. PostgreSQL hands back times in its session's
    time zone, which need not be UTC; SQLite's are UTC already (``file_rows.utc``)."""
    if value is None:
        return None
    if value.microsecond == 0:  # a signed URL's expiry: the same second for many answers
        return _whole_second(value)
    return _rendered(value)


def _rendered(value: datetime) -> str:
    if value.utcoffset():
        value = value.astimezone(UTC)
    return value.isoformat(timespec="milliseconds")[:23] + "Z"


_whole_second = functools.lru_cache(maxsize=64)(_rendered)


def _head(t: TracesetHead) -> dict[str, Any]:
    return {
        "id": t.id,
        "name": t.name,
        "description": t.description,
        "status": t.status,
        "createdAt": timestamp(t.created_at),
        "updatedAt": timestamp(t.updated_at),
        "promotedAt": timestamp(t.promoted_at),
    }


def _described(t: TracesetHead) -> dict[str, Any]:
    return {
        "workloadMetadata": (
            orjson.Fragment(t.workload_metadata) if t.workload_metadata is not None else None
        ),
        "rankCountDerived": t.rank_count,
    }


def _file(f: StoredFile) -> bytes:
    return orjson.dumps(
        {
            "name": f.name,
            "size": f.size,
            "role": f.role,
            "sha256": f.sha256 or f.sha256_declared,
            "received": f.received,
            "checked": (
                {"by": f.checked_by, "checksum": f.checked_checksum}
                if f.checked_by is not None
                else None
            ),
        }
    )


def files_page(
    files: Sequence[StoredFile], limit: int = FILES_PAGE_LIMIT
) -> tuple[list[orjson.Fragment], str | None]:
    """The first files, up to ``limit`` or ``FILES_PAGE_BYTES`` (at least one), and the
    cursor of the first file left out (None when none is)."""
    shown: list[orjson.Fragment] = []
    used = 0
    for f in files:
        entry = _file(f)
        used += len(entry) + 1
        if len(shown) == limit or (shown and used > FILES_PAGE_BYTES):
            return shown, encode_cursor(CursorKind.FILES, f.idx)
        shown.append(orjson.Fragment(entry))
    return shown, None


def traceset(t: Traceset) -> dict[str, Any]:
    """One traceset: every file when they fit in a page, else the first page and a cursor."""
    counted = t.file_summary
    shown, rest = files_page(t.files[: FILES_PAGE_LIMIT + 1])
    return {
        **_head(t),
        "fileCount": counted.count,
        "fileBytes": counted.bytes,
        "filesReceived": counted.received,
        "files": shown,
        "filesNextCursor": rest,
        **_described(t),
        "baselineId": t.baseline_id,
        "inspection": inspection(t.inspection),
    }


def listed(t: ListedTraceset) -> dict[str, Any]:
    """A list item: the files counted, the inspection's verdict; nothing that grows."""
    counted = t.file_summary
    brief = None
    if t.inspection_status is not None:
        status = "pending" if t.inspection_status == "running" else t.inspection_status
        brief = {"status": status, "ok": t.inspection_ok}
    return {
        **_head(t),
        "fileCount": counted.count,
        "fileBytes": counted.bytes,
        "filesReceived": counted.received,
        **_described(t),
        "inspection": brief,
    }


def within(items: Sequence[Any], budget: int) -> tuple[list[Any], bool]:
    """The first items whose JSON fits in ``budget`` bytes; True when some were cut."""
    kept: list[Any] = []
    used = 0
    for item in items:
        used += len(orjson.dumps(item)) + 1
        if used > budget:
            return kept, True
        kept.append(item)
    return kept, False


#: A pending inspection shows every member, empty.
_NOTHING_YET = empty_json([])


def inspection(record: InspectionRecord | None) -> orjson.Fragment | None:
    """The stored inspection JSON behind its status; running shows as pending.

    Past ``INSPECTION_EMBED_BYTES`` its lists are cut (``truncated`` says so); the
    counts it holds (``missingRankCount``) stay exact.
    """
    if record is None:
        return None
    status = "pending" if record.status == "running" else record.status
    result = record.result if record.result is not None else _NOTHING_YET
    truncated = False
    if len(result) > INSPECTION_EMBED_BYTES:
        members = orjson.loads(result)
        for name, value in members.items():
            if isinstance(value, list):
                members[name], cut = within(value, INSPECTION_LIST_BYTES)
                truncated = truncated or cut
        result = orjson.dumps(members)
    opening = b'{"status":"' + status.encode() + b'","truncated":' + orjson.dumps(truncated)
    return orjson.Fragment(opening + b"," + result[1:])


def upload_target(target: UploadTarget) -> dict[str, Any]:
    plan = target.plan
    answer: dict[str, Any] = {
        "name": target.name,
        "role": target.role,
        "method": "PUT",
        "url": plan.url,
        "headers": plan.headers,
        "expiresAt": timestamp(plan.expires_at),
    }
    if plan.parts is not None:
        answer["partSize"] = plan.part_size
        answer["parts"] = [
            {"partNumber": p.part_number, "url": p.url, "size": p.size, "headers": p.headers}
            for p in plan.parts
        ]
    return answer


def upload_targets(traceset_id: str, uploads: Sequence[UploadTarget]) -> dict[str, Any]:
    """An upload-url or add-files answer: an entry per file until their JSON passes
    ``UPLOAD_ANSWER_BYTES`` (at least one); past that, ``uploadsNextCursor`` is where the
    upload status pages on, from the first file left out."""
    shown: list[orjson.Fragment] = []
    used = 0
    for position, target in enumerate(uploads):
        entry = orjson.dumps(upload_target(target))
        used += len(entry) + 1
        if shown and used > UPLOAD_ANSWER_BYTES:
            rest = min(left.idx for left in uploads[position:])
            return {
                "tracesetId": traceset_id,
                "uploads": shown,
                "uploadsNextCursor": encode_cursor(CursorKind.UPLOADS, rest),
            }
        shown.append(orjson.Fragment(entry))
    return {"tracesetId": traceset_id, "uploads": shown}


def upload_status(status: UploadStatus) -> dict[str, Any]:
    return {
        "tracesetId": status.traceset.id,
        "status": status.traceset.status,
        "received": status.received,
        "uploads": [upload_target(u) for u in status.uploads],
        "nextCursor": None
        if status.next_idx is None
        else encode_cursor(CursorKind.UPLOADS, status.next_idx),
    }


def page(p: Page) -> dict[str, Any]:
    """A page of the list: ``limit`` items, or fewer when their JSON passes
    ``LIST_PAGE_BYTES`` (64 KiB of metadata each); ``nextCursor`` follows the last shown."""
    shown: list[orjson.Fragment] = []
    used = 0
    for before, t in enumerate(p.items):
        item = orjson.dumps(listed(t))
        used += len(item) + 1
        if shown and used > LIST_PAGE_BYTES:
            return {
                "items": shown,
                "nextCursor": p.cursor_after(p.items[before - 1]),
            }
        shown.append(orjson.Fragment(item))
    return {"items": shown, "nextCursor": p.next_cursor}


def file_list(files: Sequence[StoredFile], limit: int) -> dict[str, Any]:
    shown, rest = files_page(files, limit)
    return {"items": shown, "nextCursor": rest}


def json_response(
    content: Any, status: int = 200, headers: dict[str, str] | None = None
) -> Response:
    return Response(orjson.dumps(content), status, headers, media_type="application/json")


#: A value given back in ``errors`` is cut to null past this size: a 5,000-digit number
#: or a 60 KiB string would make the answer unreadable (and many JSON readers refuse
#: integers of over 4,300 digits). The message still says what was wrong with it.
MAX_ECHOED_VALUE_BYTES = 1_024


def _problem_item(problem: Problem) -> dict[str, Any]:
    try:
        text = jsontext.dumps(problem.value)
    except (jsontext.JsonError, TypeError):
        text = b"null"  # not JSON at all (a lone surrogate): the message names it
    value = orjson.Fragment(text) if len(text) <= MAX_ECHOED_VALUE_BYTES else None
    return {"member": problem.member, "value": value, "message": problem.message}


def problem_response(error: TracesetsError, headers: dict[str, str] | None = None) -> Response:
    return problem(error.status, error.slug, error.title, error.detail, error.problems, headers)


def problem(
    status: int,
    slug: str,
    title: str,
    detail: str,
    problems: Sequence[Problem] = (),
    headers: dict[str, str] | None = None,
) -> Response:
    """RFC 9457 problem details; ``errors`` lists every problem found."""
    note("problem", slug)
    body = {
        "type": f"urn:tracesets:problem:{slug}",
        "title": title,
        "status": status,
        "detail": detail,
        "errors": [_problem_item(p) for p in problems],
    }
    return Response(orjson.dumps(body), status, headers, media_type=PROBLEM_JSON)
