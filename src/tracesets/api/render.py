"""Records to JSON bytes. Stored metadata goes out as stored, never re-encoded."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import orjson
from fastapi import Response

from tracesets import jsontext
from tracesets.inspection.report import empty_json
from tracesets.problems import Problem, TracesetsError
from tracesets.records import InspectionRecord, Traceset
from tracesets.service import Page, UploadStatus, UploadTarget

PROBLEM_JSON = "application/problem+json"


def timestamp(value: datetime | None) -> str | None:
    if value is None:
        return None
    return value.strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond // 1000:03d}Z"


def traceset(t: Traceset) -> dict[str, Any]:
    return {
        "id": t.id,
        "name": t.name,
        "description": t.description,
        "status": t.status,
        "createdAt": timestamp(t.created_at),
        "updatedAt": timestamp(t.updated_at),
        "promotedAt": timestamp(t.promoted_at),
        "files": [
            {
                "name": f.name,
                "size": f.size,
                "role": f.role,
                "sha256": f.sha256 or f.sha256_declared,
                "received": f.received,
            }
            for f in t.files
        ],
        "workloadMetadata": (
            orjson.Fragment(t.workload_metadata) if t.workload_metadata is not None else None
        ),
        "rankCountDerived": t.rank_count,
        "inspection": inspection(t.inspection),
    }


#: A pending inspection shows every member, empty (less the opening brace: see below).
_NOTHING_YET = empty_json([])[1:]


def inspection(record: InspectionRecord | None) -> orjson.Fragment | None:
    """The stored inspection JSON behind its status; running shows as pending."""
    if record is None:
        return None
    status = "pending" if record.status == "running" else record.status
    body = record.result[1:] if record.result is not None else _NOTHING_YET
    return orjson.Fragment(b'{"status":"' + status.encode() + b'",' + body)


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
    return {"tracesetId": traceset_id, "uploads": [upload_target(u) for u in uploads]}


def upload_status(status: UploadStatus) -> dict[str, Any]:
    return {
        "tracesetId": status.traceset.id,
        "status": status.traceset.status,
        "received": status.received,
        "uploads": [upload_target(u) for u in status.uploads],
    }


def page(p: Page) -> dict[str, Any]:
    return {"items": [traceset(t) for t in p.items], "nextCursor": p.next_cursor}


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
    body = {
        "type": f"urn:tracesets:problem:{slug}",
        "title": title,
        "status": status,
        "detail": detail,
        "errors": [_problem_item(p) for p in problems],
    }
    return Response(orjson.dumps(body), status, headers, media_type=PROBLEM_JSON)
