"""What a workspace holds, summed by the database: tracesets by status, files and bytes.

Two aggregate statements, whatever the number of files: the workspace's tracesets are
found by an index of theirs that leads with the workspace, and each one's files by the
files' primary key (``traceset_seq``, ``idx``), so no row is read outside the workspace
and none reaches Python (``tests/test_usage_statements.py`` holds SQLite's plans to it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from sqlalchemy import Connection, and_, bindparam, case, func, select, text

from tracesets.db.tables import files, tracesets

STATUSES: Final = ("pending", "ready", "promoted")

#: The first key of the workspaces' advisory locks (the second is the workspace's hash):
#: the two-key space is apart from the migrations' one-key lock.
_LOCK_CLASS: Final = 7215

_BY_STATUS: Final = (
    select(tracesets.c.status, func.count())
    .where(tracesets.c.workspace == bindparam("workspace"))
    .group_by(tracesets.c.status)
)

_FILE_TOTALS: Final = (
    select(
        func.count(),
        func.coalesce(func.sum(case((files.c.received.is_(True), files.c.size), else_=0)), 0),
        func.coalesce(
            func.sum(
                case(
                    (
                        and_(files.c.received.is_(False), tracesets.c.status == "pending"),
                        files.c.size,
                    ),
                    else_=0,
                )
            ),
            0,
        ),
    )
    .select_from(tracesets.join(files, files.c.traceset_seq == tracesets.c.seq))
    .where(tracesets.c.workspace == bindparam("workspace"))
)


@dataclass(frozen=True, slots=True)
class FileTotals:
    """The workspace's files (declared ones included), the bytes of those received, and
    the declared bytes of those not received yet in pending tracesets."""

    files: int
    bytes_stored: int
    bytes_pending: int

    @property
    def bytes_held(self) -> int:
        """What a quota counts: bytes stored and bytes promised."""
        return self.bytes_stored + self.bytes_pending


def traceset_counts(conn: Connection, *, workspace: str) -> dict[str, int]:
    """How many tracesets of each status (every status named, 0 when none)."""
    counts = dict.fromkeys(STATUSES, 0)
    for status, count in conn.execute(_BY_STATUS, {"workspace": workspace}):
        counts[str(status)] = int(count)
    return counts


def file_totals(conn: Connection, *, workspace: str) -> FileTotals:
    row = conn.execute(_FILE_TOTALS, {"workspace": workspace}).one()
    return FileTotals(int(row[0]), int(row[1]), int(row[2]))


def hold_workspace(conn: Connection, workspace: str) -> None:
    """Hold the workspace's writes that count its usage until this transaction ends.

    SQLite's one writer holds them already; PostgreSQL's transactions run side by side,
    so they queue on a transaction lock of the workspace's.
    """
    if conn.dialect.name == "postgresql":
        conn.execute(
            text("SELECT pg_advisory_xact_lock(:kind, hashtext(:workspace))"),
            {"kind": _LOCK_CLASS, "workspace": workspace},
        )
