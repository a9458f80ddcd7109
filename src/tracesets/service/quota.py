"""A workspace's usage, and the quota of bytes it may hold (``TRACESETS_QUOTA_BYTES``).

The quota counts the bytes a workspace stores plus those its pending tracesets declare
and have not sent yet: an upload is refused when it is declared, before a byte moves,
not once terabytes have been sent. The check runs in the very transaction that inserts
the files (upload-url's and add-files'), so what it read is what the insert adds to:

- SQLite has one writer at a time (``BEGIN IMMEDIATE``), across processes, so two
  uploads' checks and inserts never interleave;
- PostgreSQL's transactions run side by side, so the check first takes a transaction
  lock of the workspace's (``pg_advisory_xact_lock``), held until the commit: the next
  upload of that workspace checks only once this one's files are counted.

So no two uploads pass the quota together on either database. Only quota-checked writes
take the lock; without a quota nothing is counted and nothing waits.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Connection

from tracesets.db import usage
from tracesets.problems import PayloadTooLarge, Problem


@dataclass(frozen=True, slots=True)
class Usage:
    """What ``GET /api/v1/usage`` answers for a workspace."""

    tracesets: dict[str, int]
    files: usage.FileTotals
    quota_bytes: int | None


def read_usage(conn: Connection, workspace: str, quota_bytes: int | None) -> Usage:
    return Usage(
        usage.traceset_counts(conn, workspace=workspace),
        usage.file_totals(conn, workspace=workspace),
        quota_bytes,
    )


def check_quota(
    conn: Connection, workspace: str, quota_bytes: int | None, adding: int, member: str
) -> None:
    """Refuse (413) ``adding`` declared bytes that would take the workspace past its
    quota; call it in the write transaction that inserts them, before the insert."""
    if quota_bytes is None:
        return
    usage.hold_workspace(conn, workspace)
    held = usage.file_totals(conn, workspace=workspace).bytes_held
    if held + adding > quota_bytes:
        raise PayloadTooLarge.of(
            [
                Problem(
                    member,
                    adding,
                    f"This upload would bring the workspace to {held + adding:,} bytes, past "
                    f"its quota of {quota_bytes:,} bytes ({held:,} stored or declared)",
                )
            ]
        )
