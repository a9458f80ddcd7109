"""A page of a workspace's tracesets, newest first or by a performance figure, filtered:
each traceset with its files counted and its inspection's verdict and figures, in one
statement per page.
"""

from __future__ import annotations

import functools
from typing import Any, Final, NamedTuple

from sqlalchemy import (
    BindParameter,
    ColumnElement,
    Connection,
    Row,
    Select,
    bindparam,
    case,
    func,
    select,
    tuple_,
)

from tracesets.db.queries import head
from tracesets.db.tables import files, inspections, tracesets
from tracesets.performance import COLUMNS as PERFORMANCE
from tracesets.performance import Performance
from tracesets.records import FileSummary, ListedTraceset
from tracesets.vocabulary import DEFAULT_SORT, FILTERS, ListFilter, Sort


def _of_files(counted: ColumnElement[Any]) -> Any:
    """A figure of the listed traceset's files, read from their rows by the database."""
    return select(counted).where(files.c.traceset_seq == tracesets.c.seq).scalar_subquery()


def _name(name: str) -> str:
    return f"filter_{name}"


def _value(name: str) -> BindParameter[Any]:
    return bindparam(_name(name))


#: A page's columns: the traceset's, its files counted (no file row leaves the database;
#: three lookups of a traceset's files, each the length of its rows in the files' index)
#: and its inspection's verdict, without its (unbounded) result. One statement, built once
#: with bound parameters: as three statements, a filtered page's built on each call, the
#: list took 31 % of the event loop under bench/load.py, as much as PUT, complete and GET.
_LISTED = select(
    tracesets,
    _of_files(func.count()).label("file_count"),
    _of_files(func.coalesce(func.sum(files.c.size), 0)).label("file_bytes"),
    _of_files(func.coalesce(func.sum(case((files.c.received.is_(True), 1), else_=0)), 0)).label(
        "files_received"
    ),
    inspections.c.status.label("inspection_status"),
    inspections.c.ok.label("inspection_ok"),
    *(inspections.c[name] for name in PERFORMANCE),
).select_from(tracesets.outerjoin(inspections, inspections.c.traceset_seq == tracesets.c.seq))
_NEWEST = (
    _LISTED.where(tracesets.c.workspace == bindparam("workspace"))
    .order_by(tracesets.c.seq.desc())
    .limit(bindparam("limit"))
)
_OLDER = _NEWEST.where(tracesets.c.seq < bindparam("before_seq"))

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
#: The list filters on the inspection's performance figures (``tracesets.performance``):
#: each a bound (at most, at least) on its figure, or ``has_stragglers``'s or ``regressed``'s
#: equality (each with its own partial index on the inspection's workspace).
FIGURE_FILTERS: Final = {
    term.name: (
        inspections.c[term.figure] <= _value(term.name)
        if term.bound == "max"
        else inspections.c[term.figure] >= _value(term.name)
    )
    for term in FILTERS
    if term.figure is not None
} | {
    "has_stragglers": inspections.c.has_stragglers == _value("has_stragglers"),
    "regressed": inspections.c.regressed == _value("regressed"),
}


def list_tracesets(
    conn: Connection,
    *,
    workspace: str,
    where: ListFilter,
    limit: int,
    before_seq: int | None,
    sort: Sort = DEFAULT_SORT,
    after_figure: float | None = None,
) -> list[ListedTraceset]:
    """Newest first (or sorted by a figure, from ``(after_figure, before_seq)`` on), each
    with its files counted (never listed).

    With filters, the first one given picks candidates from its own
    (workspace, column, seq) index, newest first and in batches, and the others are
    checked on those rows. Left to itself, PostgreSQL may instead walk the primary key
    backwards filtering rows, which takes seconds when every match is old; an
    index-only scan of the filter's index is cheap whatever the rows' age.
    """
    asked = where.given()
    bound: dict[str, Any] = {"workspace": workspace, "limit": limit, "before_seq": before_seq}
    figures = tuple(name for name in FIGURE_FILTERS if name in asked)
    if figures or sort != DEFAULT_SORT:
        shape = _Shape.of(asked)
        bound.update({_name(name): asked[name] for name in (*shape.columns, *figures)})
        bound["after_figure"] = after_figure
        statement = _figured(shape, figures, sort, before_seq is not None)
        return _listed(conn.execute(statement, bound).all())
    if not asked:
        statement = _NEWEST if before_seq is None else _OLDER
        return _listed(conn.execute(statement, bound).all())
    shape = _Shape.of(asked)
    bound.update({_name(name): asked[name] for name in shape.columns})  # verdicts are literals
    if shape.lead is None:
        rows = conn.execute(_unled(shape, before_seq is not None), bound).all()
    else:
        rows = _filtered_rows(conn, shape, bound, limit)
    return _listed(rows)


def _listed(rows: Any) -> list[ListedTraceset]:
    """The list items of ``rows`` (``_LISTED``'s)."""
    return [
        ListedTraceset(
            **head(row),
            file_summary=FileSummary(
                int(row.file_count), int(row.file_bytes), int(row.files_received)
            ),
            inspection_status=row.inspection_status,
            inspection_ok=None if row.inspection_ok is None else bool(row.inspection_ok),
            performance=Performance(
                row.gpu_idle_pct,
                row.comm_overlap_pct,
                row.step_ms,
                None if row.has_stragglers is None else bool(row.has_stragglers),
            ),
        )
        for row in rows
    ]


class _Shape(NamedTuple):
    """Which column filters a list asks for, in ``FILTER_COLUMNS`` order (the first leads),
    and which verdicts, with their value (``IS TRUE`` takes no bound parameter on
    PostgreSQL): a page's statements are built once for each shape."""

    columns: tuple[str, ...]
    verdicts: tuple[tuple[str, bool], ...]

    @classmethod
    def of(cls, asked: dict[str, Any]) -> _Shape:
        columns = tuple(name for name in FILTER_COLUMNS if name in asked)
        verdicts = tuple((name, bool(asked[name])) for name in VERDICT_COLUMNS if name in asked)
        return cls(columns, verdicts)

    @property
    def lead(self) -> str | None:
        return self.columns[0] if self.columns else None

    @property
    def lead_alone(self) -> bool:
        """Whether every candidate of the lead filter is on the page: then a page shorter
        than asked means there are no more, and the batch's extent need not be read."""
        return len(self.columns) == 1 and not self.verdicts


def _checked(shape: _Shape, chosen: Select[Any]) -> Select[Any]:
    """``chosen`` (``tracesets`` rows or their seqs) of the workspace, with every filter
    but the lead one."""
    query = chosen.where(tracesets.c.workspace == bindparam("workspace"))
    for name in shape.columns[1:]:
        query = query.where(FILTER_COLUMNS[name] == _value(name))
    for name, value in shape.verdicts:
        verdict = select(inspections.c.traceset_seq).where(VERDICT_COLUMNS[name].is_(value))
        query = query.where(tracesets.c.seq.in_(verdict))
    return query


@functools.cache
def _unled(shape: _Shape, before: bool) -> Select[Any]:
    """A page filtered by verdicts only: the workspace's index walked newest first."""
    query = _checked(shape, _LISTED)
    if before:
        query = query.where(tracesets.c.seq < bindparam("before_seq"))
    return query.order_by(tracesets.c.seq.desc()).limit(bindparam("limit"))


@functools.cache
def _figured(shape: _Shape, figures: tuple[str, ...], sort: Sort, after: bool) -> Select[Any]:
    """A page filtered on figures, or sorted by one: the page's seqs are chosen from the
    inspections first, each figure's condition on the inspection's own workspace column
    (so that the figure's (workspace, figure, traceset) index can serve it), then only
    their columns read.

    Sorted by a figure, the page walks that figure's index in its order, ties by
    traceset, from ``(after_figure, before_seq)`` on: the keyset of the sorted order, a
    row comparison both databases seek the index with. A traceset without the figure is
    in no sorted list: its NULL has no place in the order, and leaving it out keeps the
    walk inside the partial index.
    """
    chosen = select(inspections.c.traceset_seq).where(
        inspections.c.workspace == bindparam("workspace"),
        *(FIGURE_FILTERS[name] for name in figures),
        *(VERDICT_COLUMNS[name].is_(value) for name, value in shape.verdicts),
    )
    if shape.columns:
        chosen = chosen.join(tracesets, tracesets.c.seq == inspections.c.traceset_seq).where(
            *(FILTER_COLUMNS[name] == _value(name) for name in shape.columns)
        )
    if sort == DEFAULT_SORT:
        # Ordered by an expression, not the key: else SQLite walks every inspection newest
        # first checking the figure, as long as the matches are old; this way the figure's
        # own index gives the matches, and only they are sorted.
        key: tuple[ColumnElement[Any], ...] = (inspections.c.traceset_seq + 0,)
        listed_key: tuple[ColumnElement[Any], ...] = (tracesets.c.seq,)
        descending = True
        if after:
            chosen = chosen.where(inspections.c.traceset_seq < bindparam("before_seq"))
    else:
        figure = inspections.c[sort.removeprefix("-")]
        key, listed_key = (figure, inspections.c.traceset_seq), (figure, tracesets.c.seq)
        descending = sort.startswith("-")
        chosen = chosen.where(figure.is_not(None))
        if after:
            since = tuple_(bindparam("after_figure"), bindparam("before_seq"))
            chosen = chosen.where(tuple_(*key) < since if descending else tuple_(*key) > since)
    order = [c.desc() for c in key] if descending else list(key)
    seqs = chosen.order_by(*order).limit(bindparam("limit"))
    listed_order = [c.desc() for c in listed_key] if descending else list(listed_key)
    return _LISTED.where(tracesets.c.seq.in_(seqs)).order_by(*listed_order)


@functools.cache
def _led(shape: _Shape, before: bool) -> tuple[Select[Any], Select[int, Any]]:
    """A page's rows among a batch of the lead filter's candidates, and that batch's
    extent (how many, and the oldest).

    The page's seqs are chosen first, and only then its columns read: sorting the
    candidates, the database would otherwise count the files of every one of them.
    """
    lead = shape.lead
    assert lead is not None
    candidates = (
        select(tracesets.c.seq)
        .where(
            tracesets.c.workspace == bindparam("workspace"),
            FILTER_COLUMNS[lead] == _value(lead),
            *([tracesets.c.seq < bindparam("before_seq")] if before else []),
        )
        .order_by(tracesets.c.seq.desc())
        .limit(bindparam("batch"))
    )
    seqs = (
        _checked(shape, select(tracesets.c.seq))
        .where(tracesets.c.seq.in_(candidates))
        .order_by(tracesets.c.seq.desc())
        .limit(bindparam("limit"))
    )
    page = _LISTED.where(tracesets.c.seq.in_(seqs)).order_by(tracesets.c.seq.desc())
    batch = candidates.subquery()
    return page, select(func.count(), func.min(batch.c.seq))


def _filtered_rows(
    conn: Connection, shape: _Shape, bound: dict[str, Any], limit: int
) -> list[Row[Any]]:
    """The page's rows, the lead filter's candidates picked by the database itself.

    A batch of candidates is a subquery (its LIMIT keeps it an index-only scan of the lead
    filter's index), so no candidate crosses into Python. Only when the other filters drop
    some of a batch's rows is the batch's extent read, to go on past it.
    """
    batch = max(4 * limit, 200)
    rows: list[Row[Any]] = []
    while len(rows) < limit:
        page, extent = _led(shape, bound["before_seq"] is not None)
        values = {**bound, "batch": batch, "limit": limit - len(rows)}
        rows.extend(conn.execute(page, values).all())
        if len(rows) >= limit or shape.lead_alone:
            break
        # Fewer rows than asked: the batch is used up. Go on only if it was full.
        counted, oldest = conn.execute(extent, values).one()
        if counted < batch:
            break
        bound = {**bound, "before_seq": oldest}
    return rows
