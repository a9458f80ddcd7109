"""Every statement the service runs, as functions of an open connection.

The caller owns the transaction (``Database.read()`` / ``write()``), so a use case
that reads, checks and writes does it atomically.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime
from typing import Any, Final

from sqlalchemy import (
    Connection,
    Row,
    bindparam,
    case,
    delete,
    func,
    insert,
    literal,
    select,
    update,
)

from tracesets.db import prepared
from tracesets.db.file_rows import (
    INSERT_FILES,
    declared,
    file_row,
    files_from,
    utc,
)
from tracesets.db.tables import files, inspection_ranks, inspections, tracesets
from tracesets.performance import COLUMNS as PERFORMANCE
from tracesets.performance import UNKNOWN, Performance
from tracesets.records import (
    FileSummary,
    InspectionRecord,
    StoredFile,
    Traceset,
    TracesetHead,
)
from tracesets.uploadrequest import UploadRequest
from tracesets.vocabulary import Status

# Built once: a statement object is reusable, and building it per call is most of
# the cost of a small insert.
_INSERT_TRACESET = insert(tracesets).returning(tracesets.c.seq)


def insert_traceset(
    conn: Connection,
    *,
    workspace: str,
    traceset_id: str,
    request: UploadRequest,
    uploads: Sequence[tuple[str | None, int | None]],
    now: datetime,
) -> Traceset:
    """Insert a pending traceset; ``uploads`` is each file's (upload id, part size).

    Returns the record as stored, built from what was inserted (no read back).
    """
    metadata = request.workload_metadata
    seq: int = prepared.insert_one(
        conn,
        _INSERT_TRACESET,
        {
            "id": traceset_id,
            "workspace": workspace,
            "name": request.name,
            "description": request.description,
            "status": "pending",
            "created_at": now,
            "updated_at": now,
            "workload_metadata": metadata.decode() if metadata is not None else None,
            "rank_count": request.rank_count,
            "baseline_id": request.baseline_id,
        },
    )
    stored = [
        declared(idx, spec, upload_id, part_size)
        for idx, (spec, (upload_id, part_size)) in enumerate(
            zip(request.files, uploads, strict=True)
        )
    ]
    prepared.execute_many(conn, INSERT_FILES, [file_row(seq, f) for f in stored])
    return Traceset(
        seq=seq,
        id=traceset_id,
        workspace=workspace,
        name=request.name,
        description=request.description,
        status="pending",
        created_at=now,
        updated_at=now,
        promoted_at=None,
        workload_metadata=metadata,
        rank_count=request.rank_count,
        files=stored,
        baseline_id=request.baseline_id,
    )


def traceset_state(
    conn: Connection, *, workspace: str, traceset_id: str, lock: bool = False
) -> tuple[int, Status, int | None] | None:
    """(seq, status, rank count) of a traceset, without its files. With ``lock`` its row
    stays locked until the transaction ends (PostgreSQL; SQLite's write transaction is
    already exclusive): files added under the lock take the next indices without
    colliding, and ``complete`` waits for them."""
    query = select(tracesets.c.seq, tracesets.c.status, tracesets.c.rank_count).where(
        tracesets.c.id == traceset_id, tracesets.c.workspace == workspace
    )
    if lock and conn.dialect.name != "sqlite":
        query = query.with_for_update()
    row = conn.execute(query).one_or_none()
    return None if row is None else (row.seq, row.status, row.rank_count)


def head(row: Row[Any]) -> dict[str, Any]:
    """The members of a ``TracesetHead`` from a tracesets row."""
    created, updated = utc(row.created_at), utc(row.updated_at)
    assert created is not None and updated is not None
    metadata = row.workload_metadata
    return {
        "seq": row.seq,
        "id": row.id,
        "workspace": row.workspace,
        "name": row.name,
        "description": row.description,
        "status": row.status,
        "created_at": created,
        "updated_at": updated,
        "promoted_at": utc(row.promoted_at),
        "workload_metadata": metadata.encode() if metadata is not None else None,
        "rank_count": row.rank_count,
    }


def _traceset(
    row: Row[Any],
    stored_files: list[StoredFile],
    inspection: InspectionRecord | None,
    baseline_id: str | None,
) -> Traceset:
    return Traceset(**head(row), files=stored_files, inspection=inspection, baseline_id=baseline_id)


def get_head(conn: Connection, *, workspace: str, traceset_id: str) -> TracesetHead | None:
    """The traceset without its files or inspection (to page its files)."""
    row = conn.execute(
        select(tracesets).where(tracesets.c.id == traceset_id, tracesets.c.workspace == workspace)
    ).one_or_none()
    return None if row is None else TracesetHead(**head(row))


# One traceset's reads, built once with their values bound per call: building a
# statement (and its cache key) on each call cost more than running it.
_BY_ID = select(tracesets).where(tracesets.c.id == bindparam("traceset_id"))
_BY_ID_IN_WORKSPACE = _BY_ID.where(tracesets.c.workspace == bindparam("workspace"))
_INSPECTION_OF = select(
    inspections.c.status, inspections.c.result, inspections.c.baseline_id
).where(inspections.c.traceset_seq == bindparam("seq"))
#: Without GROUP BY: one row, zeros for a traceset without files.
_SUMMARY_OF = select(
    func.count(),
    func.coalesce(func.sum(files.c.size), 0),
    func.coalesce(func.sum(case((files.c.received.is_(True), 1), else_=0)), 0),
).where(files.c.traceset_seq == bindparam("seq"))


def get_traceset(
    conn: Connection,
    *,
    workspace: str | None,
    traceset_id: str,
    for_update: bool = False,
    files_limit: int | None = None,
) -> Traceset | None:
    """The traceset ``traceset_id`` of ``workspace`` (of any workspace when None: signed URLs).

    With ``files_limit``, only its first files and their count (for an answer, which shows
    a page of them): one page of rows, whatever the traceset holds."""
    params = {"traceset_id": traceset_id}
    query = _BY_ID
    if workspace is not None:
        query, params["workspace"] = _BY_ID_IN_WORKSPACE, workspace
    if for_update and conn.dialect.name != "sqlite":
        query = query.with_for_update()
    row = conn.execute(query, params).one_or_none()
    if row is None:
        return None
    seq = {"seq": row.seq}
    found = conn.execute(_INSPECTION_OF, seq).one_or_none()
    inspection = (
        None
        if found is None
        else InspectionRecord(found.status, found.result.encode() if found.result else None)
    )
    # the baseline the inspection compared with, else the one the upload named
    baseline_id = (found.baseline_id if found is not None else None) or row.baseline_id
    if files_limit is None:
        stored = files_from(conn, seq=row.seq, start=0, limit=None)
        return _traceset(row, stored, inspection, baseline_id)
    n, size, got = conn.execute(_SUMMARY_OF, seq).one()
    return Traceset(
        **head(row),
        files=files_from(conn, seq=row.seq, start=0, limit=files_limit),
        inspection=inspection,
        counted=FileSummary(int(n), int(size), int(got)),
        baseline_id=baseline_id,
    )


def get_status(conn: Connection, workspace: str, traceset_id: str) -> Status | None:
    """The traceset's status alone; None when there is no such traceset."""
    status: Status | None = conn.execute(
        select(tracesets.c.status).where(
            tracesets.c.id == traceset_id, tracesets.c.workspace == workspace
        )
    ).scalar_one_or_none()
    return status


def pending_before(conn: Connection, cutoff: datetime, limit: int) -> list[tuple[str, str]]:
    """(workspace, id) of pending tracesets created before ``cutoff``, oldest first."""
    rows = conn.execute(
        select(tracesets.c.workspace, tracesets.c.id)
        .where(tracesets.c.status == "pending", tracesets.c.created_at < cutoff)
        .order_by(tracesets.c.created_at)
        .limit(limit)
    )
    return [(row.workspace, row.id) for row in rows]


def existing_ids(conn: Connection, ids: Collection[str]) -> set[str]:
    """Which of ``ids`` name a traceset, in any workspace and any status."""
    if not ids:
        return set()
    rows = conn.execute(select(tracesets.c.id).where(tracesets.c.id.in_(sorted(ids))))
    return {row.id for row in rows}


# The writes of complete and promote, built once (as the reads above).
_PROMOTE = (
    update(tracesets)
    .where(tracesets.c.seq == bindparam("b_seq"))
    .values(
        status="promoted",
        promoted_at=bindparam("b_now"),
        updated_at=bindparam("b_now"),
        workload_metadata=bindparam("b_metadata"),
    )
)
_SET_STATUS = (
    update(tracesets)
    .where(tracesets.c.seq == bindparam("b_seq"))
    .values(status=bindparam("b_status"), updated_at=bindparam("b_now"))
)
#: The traceset's workspace is copied so that the queue can take workspaces in turn.
_QUEUE_INSPECTION = insert(inspections).from_select(
    ["traceset_seq", "workspace", "status", "attempts"],
    select(tracesets.c.seq, tracesets.c.workspace, literal("pending"), literal(0)).where(
        tracesets.c.seq == bindparam("b_seq")
    ),
)


def promote(conn: Connection, *, seq: int, workload_metadata: bytes | None, now: datetime) -> None:
    metadata = workload_metadata.decode() if workload_metadata is not None else None
    conn.execute(_PROMOTE, {"b_seq": seq, "b_now": now, "b_metadata": metadata})


def set_status(conn: Connection, *, seq: int, status: Status, now: datetime) -> None:
    conn.execute(_SET_STATUS, {"b_seq": seq, "b_status": status, "b_now": now})


def delete_traceset(conn: Connection, *, seq: int) -> None:
    conn.execute(delete(files).where(files.c.traceset_seq == seq))
    conn.execute(delete(tracesets).where(tracesets.c.seq == seq))


# -- inspections -------------------------------------------------------------------------


def queue_inspection(conn: Connection, *, seq: int) -> None:
    conn.execute(_QUEUE_INSPECTION, {"b_seq": seq})


#: Built once, with bound parameters: building them cost more than running them.
_FINISH: Final = (
    update(inspections)
    .where(inspections.c.traceset_seq == bindparam("seq"))
    .values(
        status=bindparam("outcome"),
        ok=bindparam("verdict"),
        consistent=bindparam("agreed"),
        result=bindparam("found"),
        finished_at=bindparam("now"),
        **{name: bindparam(name) for name in PERFORMANCE},
    )
)
_DROP_RANKS: Final = delete(inspection_ranks).where(
    inspection_ranks.c.traceset_seq == bindparam("seq")
)


def finish_inspection(
    conn: Connection,
    *,
    seq: int,
    status: str,
    ok: bool | None,
    result: bytes,
    now: datetime,
    consistent: bool | None = None,
    ranks: Sequence[bytes] = (),
    performance: Performance = UNKNOWN,
) -> None:
    """Record an inspection's result, its figures for the list, and every trace's
    figures in rank order."""
    conn.execute(
        _FINISH,
        {
            "seq": seq,
            "outcome": status,
            "verdict": ok,
            "agreed": consistent,
            "found": result.decode(),
            "now": now,
            **{name: getattr(performance, name) for name in PERFORMANCE},
        },
    )
    conn.execute(_DROP_RANKS, {"seq": seq})
    if ranks:
        conn.execute(
            insert(inspection_ranks),
            [
                {"traceset_seq": seq, "position": position, "figures": figures.decode()}
                for position, figures in enumerate(ranks)
            ],
        )


def rank_figures(conn: Connection, *, seq: int, after: int, limit: int) -> list[tuple[int, str]]:
    """(position, per-rank JSON) of the traces after position ``after``, in rank order."""
    rows = conn.execute(
        select(inspection_ranks.c.position, inspection_ranks.c.figures)
        .where(inspection_ranks.c.traceset_seq == seq, inspection_ranks.c.position > after)
        .order_by(inspection_ranks.c.position)
        .limit(limit)
    )
    return [(row.position, row.figures) for row in rows]
