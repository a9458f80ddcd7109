"""Idempotency keys: the same upload-url request again answers the first one's traceset."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    Connection,
    delete,
    insert,
    select,
)

from tracesets.db.file_rows import utc
from tracesets.db.tables import idempotency_keys


def find_idempotency_key(
    conn: Connection, *, workspace: str, key: str, since: datetime
) -> tuple[str, str] | None:
    """(request sha256, traceset id) of ``key`` if it was used since ``since``; older uses are dropped."""
    where = (idempotency_keys.c.workspace == workspace, idempotency_keys.c.key == key)
    row = conn.execute(select(idempotency_keys).where(*where)).one_or_none()
    if row is None:
        return None
    if utc(row.created_at) < since:  # type: ignore[operator]
        conn.execute(delete(idempotency_keys).where(*where))
        return None
    return row.request_sha256, row.traceset_id


def insert_idempotency_key(
    conn: Connection,
    *,
    workspace: str,
    key: str,
    request_sha256: str,
    traceset_id: str,
    now: datetime,
) -> None:
    conn.execute(
        insert(idempotency_keys).values(
            workspace=workspace,
            key=key,
            request_sha256=request_sha256,
            traceset_id=traceset_id,
            created_at=now,
        )
    )
