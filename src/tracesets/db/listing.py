"""A page of a workspace's tracesets, newest first, filtered: the page's files counted
and its inspections' verdicts read for the whole page at once, not one traceset at a time.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from sqlalchemy import (
    Connection,
    Row,
    Select,
    bindparam,
    case,
    func,
    select,
)

from tracesets.db.queries import head
from tracesets.db.tables import files, inspections, tracesets
from tracesets.records import (
    FileSummary,
    ListedTraceset,
)
from tracesets.vocabulary import ListFilter

#: A list's statements, built once with bound parameters: building a statement and its
#: cache key on each call cost more than running it.
_FILE_SUMMARIES = (
    select(
        files.c.traceset_seq,
        func.count(),
        func.coalesce(func.sum(files.c.size), 0),
        func.coalesce(func.sum(case((files.c.received.is_(True), 1), else_=0)), 0),
    )
    .where(files.c.traceset_seq.in_(bindparam("seqs", expanding=True)))
    .group_by(files.c.traceset_seq)
)
_VERDICTS = select(inspections.c.traceset_seq, inspections.c.status, inspections.c.ok).where(
    inspections.c.traceset_seq.in_(bindparam("seqs", expanding=True))
)
_NEWEST = (
    select(tracesets)
    .where(tracesets.c.workspace == bindparam("workspace"))
    .order_by(tracesets.c.seq.desc())
    .limit(bindparam("limit"))
)
_OLDER = _NEWEST.where(tracesets.c.seq < bindparam("before_seq"))


def _file_summaries(conn: Connection, seqs: Sequence[int]) -> dict[int, FileSummary]:
    """Each traceset's files counted by the database: no file row leaves it."""
    if not seqs:
        return {}
    rows = conn.execute(_FILE_SUMMARIES, {"seqs": list(seqs)})
    return {seq: FileSummary(int(n), int(size), int(got)) for seq, n, size, got in rows}


def _inspection_verdicts(
    conn: Connection, seqs: Sequence[int]
) -> dict[int, tuple[str, bool | None]]:
    """Each inspection's status and verdict, without its (unbounded) result."""
    if not seqs:
        return {}
    rows = conn.execute(_VERDICTS, {"seqs": list(seqs)})
    return {
        row.traceset_seq: (row.status, None if row.ok is None else bool(row.ok)) for row in rows
    }


#: The list filters that equal a column of the traceset, the most selective first: the first
#: one given leads (``list_tracesets``).
FILTER_COLUMNS: Final = {
    "workload_name": tracesets.c.workload_name,
    "workload_family": tracesets.c.workload_family,
    "global_batch_size": tracesets.c.global_batch_size,
    "rank_count": tracesets.c.rank_count,
    "status": tracesets.c.status,
}
#: The list filters on the inspection's verdicts.
VERDICT_COLUMNS: Final = {
    "inspected_ok": inspections.c.ok,
    "ranks_consistent": inspections.c.consistent,
}


def list_tracesets(
    conn: Connection, *, workspace: str, where: ListFilter, limit: int, before_seq: int | None
) -> list[ListedTraceset]:
    """Newest first, each with its files counted (never listed).

    With filters, the first one given picks candidates from its own
    (workspace, column, seq) index, newest first and in batches, and the others are
    checked on those rows. Left to itself, PostgreSQL may instead walk the primary key
    backwards filtering rows, which takes seconds when every match is old; an
    index-only scan of the filter's index is cheap whatever the rows' age.
    """
    asked = where.given()
    if not asked:
        bound = {"workspace": workspace, "limit": limit, "before_seq": before_seq}
        statement = _NEWEST if before_seq is None else _OLDER
        return _listed(conn, list(conn.execute(statement, bound).all()))
    given = [(column, asked[name]) for name, column in FILTER_COLUMNS.items() if name in asked]
    query = select(tracesets).where(tracesets.c.workspace == workspace)
    for column, value in given[1:]:
        query = query.where(column == value)
    for name, verdict in VERDICT_COLUMNS.items():
        if name in asked:
            query = query.where(
                tracesets.c.seq.in_(
                    select(inspections.c.traceset_seq).where(verdict.is_(asked[name]))
                )
            )
    if not given:
        if before_seq is not None:
            query = query.where(tracesets.c.seq < before_seq)
        rows = list(conn.execute(query.order_by(tracesets.c.seq.desc()).limit(limit)).all())
    else:
        rows = _filtered_rows(conn, query, workspace, given[0], limit, before_seq)
    return _listed(conn, rows)


def _listed(conn: Connection, rows: list[Row[Any]]) -> list[ListedTraceset]:
    """The list items of ``rows``, each with its files counted and its inspection's verdict."""
    seqs = [row.seq for row in rows]
    counted, verdicts = _file_summaries(conn, seqs), _inspection_verdicts(conn, seqs)
    return [
        ListedTraceset(
            **head(row),
            file_summary=counted.get(row.seq, FileSummary(0, 0, 0)),
            inspection_status=verdicts[row.seq][0] if row.seq in verdicts else None,
            inspection_ok=verdicts[row.seq][1] if row.seq in verdicts else None,
        )
        for row in rows
    ]


def _filtered_rows(
    conn: Connection,
    query: Select[Any],
    workspace: str,
    lead: tuple[Any, Any],
    limit: int,
    before_seq: int | None,
) -> list[Row[Any]]:
    """The page's rows, the lead filter's candidates picked by the database itself.

    A batch of candidates is a subquery (its LIMIT keeps it an index-only scan of the lead
    filter's index), so no candidate crosses into Python. Only when the other filters drop
    some of a batch's rows is the batch's extent read, to go on past it.
    """
    column, value = lead
    batch = max(4 * limit, 200)
    rows: list[Row[Any]] = []
    while len(rows) < limit:
        candidates = (
            select(tracesets.c.seq)
            .where(
                tracesets.c.workspace == workspace,
                column == value,
                *([tracesets.c.seq < before_seq] if before_seq is not None else []),
            )
            .order_by(tracesets.c.seq.desc())
            .limit(batch)
        )
        page = query.where(tracesets.c.seq.in_(candidates)).order_by(tracesets.c.seq.desc())
        found = conn.execute(page.limit(limit - len(rows))).all()
        rows.extend(found)
        if len(rows) >= limit:
            break
        # Fewer rows than asked: the batch is used up. Go on only if it was full.
        extent = candidates.subquery()
        counted, oldest = conn.execute(select(func.count(), func.min(extent.c.seq))).one()
        if counted < batch:
            break
        before_seq = oldest
    return rows
