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
from typing import Any, Final, NamedTuple

from sqlalchemy import (
    ColumnElement,
    Connection,
    Row,
    Select,
    bindparam,
    delete,
    func,
    insert,
    literal,
    select,
    update,
)

from tracesets.db import inspection_turns as turns
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


#: Each statement below is built once, with bound parameters: building a statement and its
#: cache key on each call cost more CPU than running it, some 2 ms a traceset inspected.
#: Where PostgreSQL locks rows and SQLite needs not, a pair: (SQLite's, the locking one).
_Pair = tuple[Select[Any], Select[Any]]


def _for(conn: Connection, pair: _Pair) -> Select[Any]:
    return pair[0] if conn.dialect.name == "sqlite" else pair[1]


def _candidates(where: ColumnElement[bool]) -> _Pair:
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
        .limit(bindparam("limit"))
    )
    return query, query.with_for_update(skip_locked=True, of=inspection_files)


_LAPSED: Final = _candidates(
    (inspection_files.c.status == "running") & (inspection_files.c.lease_until < bindparam("now"))
)
#: A workspace's running inspections (a few: one is taken up only when the others have
#: no pending file left), then each one's pending files in order from the status index:
#: every lookup an index seek, whatever other workspaces queued. (One statement joining
#: the two let SQLite scan every pending file of all workspaces, or sort them.)
_RUNNING: Final = (
    select(inspections.c.traceset_seq)
    .where(inspections.c.status == "running", inspections.c.workspace == bindparam("workspace"))
    .order_by(inspections.c.traceset_seq)
)
_PENDING: Final = _candidates(
    (inspection_files.c.status == "pending") & (inspection_files.c.traceset_seq == bindparam("seq"))
)
_CLAIM: Final = (
    update(inspection_files)
    .where(
        inspection_files.c.traceset_seq == bindparam("seq"),
        inspection_files.c.idx == bindparam("file"),
    )
    .values(
        status="running",
        owner=bindparam("claimer"),
        lease_until=bindparam("until"),
        attempts=bindparam("n"),
    )
)


class Claimed(NamedTuple):
    """What a claim took: files, or an inspection taken up with none (its checks are due
    at once); neither when nothing is queued."""

    files: list[Claim]
    empty: int | None = None
    taken_over: int = 0  # of ``files``, those whose lease had run out (their process died)


def claim_files(
    conn: Connection,
    *,
    owner: str,
    now: datetime,
    lease_until: datetime,
    max_files: int,
    max_bytes: int,
) -> Claimed:
    """Take files to inspect: ones whose lease ran out (their process died) first, then
    pending ones of the workspace whose turn it is (``inspection_turns``), its oldest
    traceset's first, so every process works on it; up to ``max_files`` of them while
    they add up to ``max_bytes`` (always at least one), so that small files do not each
    cost a transaction and a large one is claimed alone.

    A workspace with no pending file has its oldest pending inspection taken up; one
    with neither (its files are all being read) lets the next workspace have the turn.
    Each lookup is an index seek: the rows of finished inspections, kept as their
    record, and other workspaces' queued files are never scanned.
    """
    rows = list(conn.execute(_for(conn, _LAPSED), {"now": now, "limit": max_files}))
    lapsed = len(rows)
    serving: str | None = None
    if lapsed < max_files:
        for workspace in turns.waiting(conn):
            found = _pending(conn, workspace, max_files - lapsed)
            if not found:
                seq = _take_up(conn, workspace=workspace, now=now)
                if seq is None:
                    continue
                found = _pending(conn, workspace, max_files - lapsed)
                if not found:  # no primary file at all
                    taken = _claim(conn, rows, owner, lease_until, max_bytes)
                    return Claimed(taken, seq, min(lapsed, len(taken)))
            rows += found
            serving = workspace
            break
    taken = _claim(conn, rows, owner, lease_until, max_bytes)
    if serving is not None and len(taken) > lapsed:
        turns.served(conn, serving)
    return Claimed(taken, taken_over=min(lapsed, len(taken)))


def _pending(conn: Connection, workspace: str, limit: int) -> list[Row[Any]]:
    found: list[Row[Any]] = []
    for seq in conn.execute(_RUNNING, {"workspace": workspace}).scalars():
        found += conn.execute(_for(conn, _PENDING), {"seq": seq, "limit": limit - len(found)})
        if len(found) == limit:
            break
    return found


def _claim(
    conn: Connection, rows: list[Row[Any]], owner: str, lease_until: datetime, max_bytes: int
) -> list[Claim]:
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
            _CLAIM,
            [
                {
                    "seq": c.seq,
                    "file": c.idx,
                    "n": c.attempts,
                    "claimer": owner,
                    "until": lease_until,
                }
                for c in taken
            ],
        )
    return taken


_OLDEST_PENDING: Final = (
    select(inspections.c.traceset_seq)
    .where(inspections.c.status == "pending", inspections.c.workspace == bindparam("workspace"))
    .order_by(inspections.c.traceset_seq)
    .limit(1)
)
_OLDEST_PENDING_PAIR: Final = (_OLDEST_PENDING, _OLDEST_PENDING.with_for_update(skip_locked=True))
_DROP_FILES: Final = delete(inspection_files).where(
    inspection_files.c.traceset_seq == bindparam("seq")
)
_ADD_FILES: Final = insert(inspection_files).from_select(
    ["traceset_seq", "idx", "status", "attempts"],
    select(files.c.traceset_seq, files.c.idx, literal("pending"), literal(0)).where(
        files.c.traceset_seq == bindparam("seq"), files.c.role == "primary"
    ),
)
_TAKE_UP: Final = (
    update(inspections)
    .where(inspections.c.traceset_seq == bindparam("seq"))
    .values(status="running", claimed_at=bindparam("now"), attempts=inspections.c.attempts + 1)
)


def _take_up(conn: Connection, *, workspace: str, now: datetime) -> int | None:
    """Turn the workspace's oldest pending inspection into one pending row per primary
    file (one statement, however many files); its seq, or None when none is pending."""
    seq: int | None = conn.execute(
        _for(conn, _OLDEST_PENDING_PAIR), {"workspace": workspace}
    ).scalar_one_or_none()
    if seq is None:
        return None
    conn.execute(_DROP_FILES, {"seq": seq})
    conn.execute(_ADD_FILES, {"seq": seq})
    conn.execute(_TAKE_UP, {"seq": seq, "now": now})
    return seq


_TRACESET: Final = select(tracesets.c.rank_count, tracesets.c.workload_metadata).where(
    tracesets.c.seq == bindparam("seq")
)


def traceset_of(conn: Connection, seq: int) -> tuple[int | None, str | None] | None:
    """The declared rank count and workload metadata the checks need; None once deleted."""
    row = conn.execute(_TRACESET, {"seq": seq}).one_or_none()
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


_STATUS: Final = select(inspections.c.status).where(inspections.c.traceset_seq == bindparam("seq"))
_STATUS_LOCKED: Final = _STATUS.with_for_update(key_share=True)
_TRACESET_KEPT: Final = (
    select(tracesets.c.seq)
    .where(tracesets.c.seq == bindparam("seq"))
    .with_for_update(read=True, key_share=True)
)


def lock_inspection(conn: Connection, seq: int) -> str | None:
    """The inspection's status, its row locked until the transaction ends (PostgreSQL;
    SQLite's writer is alone already). None when the traceset was deleted meanwhile.

    The traceset's row is locked first (``FOR KEY SHARE``: it only keeps the row from
    being deleted), in the order a delete takes them: a delete waits for the recorder,
    never the recorder for a delete holding the traceset while it waits for the
    inspection (a second update of the inspection's row in one transaction checks its
    foreign key, which needs the traceset's row: a deadlock, without this lock)."""
    query = _STATUS
    if conn.dialect.name != "sqlite":
        if conn.execute(_TRACESET_KEPT, {"seq": seq}).first() is None:
            return None
        query = _STATUS_LOCKED
    status: str | None = conn.execute(query, {"seq": seq}).scalar_one_or_none()
    return status


_RECORD: Final = (
    update(inspection_files)
    .where(
        inspection_files.c.traceset_seq == bindparam("seq"),
        inspection_files.c.idx == bindparam("file"),
        inspection_files.c.status == "running",
    )
    .values(
        status=bindparam("outcome"),
        owner=bindparam("recorder"),
        result=bindparam("found"),
        finished_at=bindparam("now"),
        lease_until=None,
    )
)


def record_file(
    conn: Connection, *, claim: Claim, owner: str, status: str, result: str, now: datetime
) -> bool:
    """Record a file's result, unless another process (that took over a lapsed claim)
    recorded it first; True when this one counts."""
    done = conn.execute(
        _RECORD,
        {
            "seq": claim.seq,
            "file": claim.idx,
            "outcome": status,
            "recorder": owner,
            "found": result,
            "now": now,
        },
    )
    return done.rowcount == 1


_UNFINISHED_COUNT: Final = (
    select(func.count())
    .select_from(inspection_files)
    .where(
        inspection_files.c.traceset_seq == bindparam("seq"),
        inspection_files.c.status.in_(_UNFINISHED),
    )
)
_RESULTS: Final = (
    select(files.c.name, inspection_files.c.status, inspection_files.c.result)
    .join(
        files,
        (files.c.traceset_seq == inspection_files.c.traceset_seq)
        & (files.c.idx == inspection_files.c.idx),
    )
    .where(inspection_files.c.traceset_seq == bindparam("seq"))
    .order_by(inspection_files.c.idx)
)
_CHECKED_BY: Final = (
    update(inspections)
    .where(inspections.c.traceset_seq == bindparam("seq"))
    .values(checked_by=bindparam("checker"))
)
_DROP_RESULTS: Final = (
    update(inspection_files)
    .where(inspection_files.c.traceset_seq == bindparam("seq"))
    .values(result=None)
)


def unfinished(conn: Connection, seq: int) -> int:
    count: int = conn.execute(_UNFINISHED_COUNT, {"seq": seq}).scalar_one()
    return count


def results(conn: Connection, seq: int) -> list[tuple[str, str, str]]:
    """(file name, status, result) of every file of the inspection, in file order."""
    rows = conn.execute(_RESULTS, {"seq": seq})
    return [(row.name, row.status, row.result or "") for row in rows]


def checked(conn: Connection, *, seq: int, owner: str) -> None:
    """Name who ran the checks, and drop the files' results: the inspection holds them."""
    conn.execute(_CHECKED_BY, {"seq": seq, "checker": owner})
    conn.execute(_DROP_RESULTS, {"seq": seq})


class QueueFigures(NamedTuple):
    """The inspection queue as the database sees it, for the service's metrics."""

    pending_files: int  # files of running inspections not claimed yet
    unfinished: int  # inspections queued or running
    oldest_since: datetime | None  # the oldest unfinished one's traceset last changed then
    claimants: int  # processes holding a live claim on a file


#: Each an index seek or a range of the status indexes (only unfinished rows, never the
#: finished ones kept as the record).
_PENDING_FILES: Final = select(func.count()).where(inspection_files.c.status == "pending")
_UNFINISHED_INSPECTIONS: Final = select(func.count()).where(inspections.c.status.in_(_UNFINISHED))
_OLDEST: Final = select(tracesets.c.updated_at).where(
    tracesets.c.seq
    == select(func.min(inspections.c.traceset_seq))
    .where(inspections.c.status.in_(_UNFINISHED))
    .scalar_subquery()
)
_CLAIMANTS: Final = select(func.count(inspection_files.c.owner.distinct())).where(
    inspection_files.c.status == "running", inspection_files.c.lease_until >= bindparam("now")
)


def queue_figures(conn: Connection, now: datetime) -> QueueFigures:
    oldest = conn.execute(_OLDEST).scalar()
    return QueueFigures(
        pending_files=conn.execute(_PENDING_FILES).scalar_one(),
        unfinished=conn.execute(_UNFINISHED_INSPECTIONS).scalar_one(),
        oldest_since=oldest,
        claimants=conn.execute(_CLAIMANTS, {"now": now}).scalar_one(),
    )
