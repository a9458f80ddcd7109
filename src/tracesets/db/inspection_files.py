"""The statements of inspections claimed file by file (``tracesets.service.inspections``).

A claim is a row's ``owner`` and ``lease_until``: PostgreSQL skips rows that another
transaction holds (``FOR UPDATE SKIP LOCKED``), SQLite's write transaction is already
the only writer. Recording a file locks its inspection's row first, so of two processes
finishing a traceset's last two files at once, the second sees the first's result, and
exactly one of them finds nothing left and runs the checks across ranks.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Connection,
    Select,
    bindparam,
    delete,
    func,
    insert,
    literal,
    select,
    update,
)

from tracesets.db.tables import files, inspection_files, inspections, tracesets

_UNFINISHED = ("pending", "running")


@dataclass(frozen=True, slots=True)
class Claim:
    """A file of an inspection held by this process, on its ``attempts``-th try."""

    seq: int
    idx: int
    attempts: int
    traceset_id: str
    name: str
    size: int
    sha256: str | None


def _candidates(conn: Connection, where: ColumnElement[bool], limit: int) -> Select[Any]:
    query = (
        select(
            inspection_files.c.traceset_seq,
            inspection_files.c.idx,
            inspection_files.c.attempts,
            tracesets.c.id,
            files.c.name,
            files.c.size,
            files.c.sha256,
        )
        .join(
            files,
            (files.c.traceset_seq == inspection_files.c.traceset_seq)
            & (files.c.idx == inspection_files.c.idx),
        )
        .join(tracesets, tracesets.c.seq == inspection_files.c.traceset_seq)
        .where(where)
        .order_by(inspection_files.c.traceset_seq, inspection_files.c.idx)
        .limit(limit)
    )
    if conn.dialect.name != "sqlite":
        query = query.with_for_update(skip_locked=True, of=inspection_files)
    return query


def claim_files(
    conn: Connection,
    *,
    owner: str,
    now: datetime,
    lease_until: datetime,
    max_files: int,
    max_bytes: int,
) -> list[Claim]:
    """Take files to inspect: ones whose lease ran out (their process died) first, then
    pending ones, the oldest traceset's first, so every process works on it; up to
    ``max_files`` of them while they add up to ``max_bytes`` (always at least one), so
    that small files do not each cost a transaction and a large one is claimed alone.

    Each kind is its own lookup of the status index: the rows of finished inspections,
    kept as their record, are never scanned.
    """
    lapsed = (inspection_files.c.status == "running") & (inspection_files.c.lease_until < now)
    rows = list(conn.execute(_candidates(conn, lapsed, max_files)))
    if len(rows) < max_files:
        pending = inspection_files.c.status == "pending"
        rows += conn.execute(_candidates(conn, pending, max_files - len(rows)))
    taken: list[Claim] = []
    total = 0
    for row in rows:
        total += row.size
        if taken and total > max_bytes:
            break
        taken.append(
            Claim(
                row.traceset_seq, row.idx, row.attempts + 1, row.id, row.name, row.size, row.sha256
            )
        )
    if taken:
        conn.execute(
            update(inspection_files)
            .where(
                inspection_files.c.traceset_seq == bindparam("seq"),
                inspection_files.c.idx == bindparam("file"),
            )
            .values(
                status="running", owner=owner, lease_until=lease_until, attempts=bindparam("n")
            ),
            [{"seq": c.seq, "file": c.idx, "n": c.attempts} for c in taken],
        )
    return taken


def take_up_inspection(conn: Connection, *, now: datetime) -> int | None:
    """Turn the oldest pending inspection into one pending row per primary file (one
    statement, however many files); its seq, or None when none is pending."""
    candidate = (
        select(inspections.c.traceset_seq)
        .where(inspections.c.status == "pending")
        .order_by(inspections.c.traceset_seq)
        .limit(1)
    )
    if conn.dialect.name != "sqlite":
        candidate = candidate.with_for_update(skip_locked=True)
    seq: int | None = conn.execute(candidate).scalar_one_or_none()
    if seq is None:
        return None
    conn.execute(delete(inspection_files).where(inspection_files.c.traceset_seq == seq))
    primary = select(files.c.traceset_seq, files.c.idx, literal("pending"), literal(0)).where(
        files.c.traceset_seq == seq, files.c.role == "primary"
    )
    conn.execute(
        insert(inspection_files).from_select(["traceset_seq", "idx", "status", "attempts"], primary)
    )
    conn.execute(
        update(inspections)
        .where(inspections.c.traceset_seq == seq)
        .values(status="running", claimed_at=now, attempts=inspections.c.attempts + 1)
    )
    return seq


def traceset_of(conn: Connection, seq: int) -> tuple[int | None, str | None] | None:
    """The declared rank count and workload metadata the checks need; None once deleted."""
    row = conn.execute(
        select(tracesets.c.rank_count, tracesets.c.workload_metadata).where(tracesets.c.seq == seq)
    ).one_or_none()
    return None if row is None else (row.rank_count, row.workload_metadata)


def renew(conn: Connection, *, held: Sequence[Claim], owner: str, lease_until: datetime) -> None:
    """Push the leases of files this process still holds (not those taken over)."""
    conn.execute(
        update(inspection_files)
        .where(
            inspection_files.c.traceset_seq == bindparam("seq"),
            inspection_files.c.idx == bindparam("file"),
            inspection_files.c.owner == owner,
            inspection_files.c.status == "running",
        )
        .values(lease_until=lease_until),
        [{"seq": c.seq, "file": c.idx} for c in held],
    )


def release(conn: Connection, *, claim: Claim, owner: str, count_attempt: bool) -> None:
    """Give a held file back, to be claimed again at once; a process stopping cleanly does
    not count its interrupted try among the file's attempts."""
    attempts = claim.attempts if count_attempt else claim.attempts - 1
    conn.execute(
        update(inspection_files)
        .where(
            inspection_files.c.traceset_seq == claim.seq,
            inspection_files.c.idx == claim.idx,
            inspection_files.c.owner == owner,
            inspection_files.c.status == "running",
        )
        .values(status="pending", owner=None, lease_until=None, attempts=attempts)
    )


def lock_inspection(conn: Connection, seq: int) -> str | None:
    """The inspection's status, its row locked until the transaction ends (PostgreSQL;
    SQLite's writer is alone already). None when the traceset was deleted meanwhile.

    The traceset's row is locked first (``FOR KEY SHARE``: it only keeps the row from
    being deleted), in the order a delete takes them: a delete waits for the recorder,
    never the recorder for a delete holding the traceset while it waits for the
    inspection (a second update of the inspection's row in one transaction checks its
    foreign key, which needs the traceset's row: a deadlock, without this lock)."""
    query = select(inspections.c.status).where(inspections.c.traceset_seq == seq)
    if conn.dialect.name != "sqlite":
        traceset = select(tracesets.c.seq).where(tracesets.c.seq == seq)
        if conn.execute(traceset.with_for_update(read=True, key_share=True)).first() is None:
            return None
        query = query.with_for_update(key_share=True)
    status: str | None = conn.execute(query).scalar_one_or_none()
    return status


def record_file(
    conn: Connection, *, claim: Claim, owner: str, status: str, result: str, now: datetime
) -> bool:
    """Record a file's result, unless another process (that took over a lapsed claim)
    recorded it first; True when this one counts."""
    done = conn.execute(
        update(inspection_files)
        .where(
            inspection_files.c.traceset_seq == claim.seq,
            inspection_files.c.idx == claim.idx,
            inspection_files.c.status == "running",
        )
        .values(status=status, owner=owner, result=result, finished_at=now, lease_until=None)
    )
    return done.rowcount == 1


def unfinished(conn: Connection, seq: int) -> int:
    count: int = conn.execute(
        select(func.count())
        .select_from(inspection_files)
        .where(inspection_files.c.traceset_seq == seq, inspection_files.c.status.in_(_UNFINISHED))
    ).scalar_one()
    return count


def results(conn: Connection, seq: int) -> list[tuple[str, str, str]]:
    """(file name, status, result) of every file of the inspection, in file order."""
    rows = conn.execute(
        select(files.c.name, inspection_files.c.status, inspection_files.c.result)
        .join(
            files,
            (files.c.traceset_seq == inspection_files.c.traceset_seq)
            & (files.c.idx == inspection_files.c.idx),
        )
        .where(inspection_files.c.traceset_seq == seq)
        .order_by(inspection_files.c.idx)
    )
    return [(row.name, row.status, row.result or "") for row in rows]


def checked(conn: Connection, *, seq: int, owner: str) -> None:
    """Name who ran the checks, and drop the files' results: the inspection holds them."""
    conn.execute(
        update(inspections).where(inspections.c.traceset_seq == seq).values(checked_by=owner)
    )
    conn.execute(
        update(inspection_files).where(inspection_files.c.traceset_seq == seq).values(result=None)
    )
