"""Every statement the service runs, as functions of an open connection.

The caller owns the transaction (``Database.read()`` / ``write()``), so a use case
that reads, checks and writes does it atomically.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, Row, Select, delete, insert, select, update

from tracesets.db.tables import files, idempotency_keys, inspection_ranks, inspections, tracesets
from tracesets.records import InspectionRecord, Status, StoredFile, Traceset
from tracesets.uploadrequest import UploadRequest


def _utc(value: datetime | None) -> datetime | None:
    # SQLite hands back naive datetimes; everything stored is UTC.
    if value is None or value.tzinfo is not None:
        return value
    return value.replace(tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class ListFilter:
    status: Status | None = None
    rank_count: int | None = None
    workload_family: str | None = None
    workload_name: str | None = None
    global_batch_size: int | None = None
    inspected_ok: bool | None = None
    ranks_consistent: bool | None = None


# Built once: a statement object is reusable, and building it per call is most of
# the cost of a small insert.
_INSERT_TRACESET = insert(tracesets).returning(tracesets.c.seq)
_INSERT_FILES = insert(files)


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
    seq: int = conn.execute(
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
        },
    ).scalar_one()
    stored = [
        StoredFile(
            idx=idx,
            name=spec.name,
            size=spec.size,
            role=spec.role,
            sha256_declared=spec.sha256,
            sha256=None,
            received=False,
            upload_id=upload_id,
            part_size=part_size,
        )
        for idx, (spec, (upload_id, part_size)) in enumerate(
            zip(request.files, uploads, strict=True)
        )
    ]
    conn.execute(_INSERT_FILES, [{"traceset_seq": seq, **asdict(f)} for f in stored])
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
    )


def _files_by_seq(conn: Connection, seqs: Sequence[int]) -> dict[int, list[StoredFile]]:
    grouped: dict[int, list[StoredFile]] = defaultdict(list)
    if not seqs:
        return grouped
    rows = conn.execute(
        select(files)
        .where(files.c.traceset_seq.in_(seqs))
        .order_by(files.c.traceset_seq, files.c.idx)
    )
    for row in rows:
        grouped[row.traceset_seq].append(
            StoredFile(
                idx=row.idx,
                name=row.name,
                size=row.size,
                role=row.role,
                sha256_declared=row.sha256_declared,
                sha256=row.sha256,
                received=bool(row.received),
                upload_id=row.upload_id,
                part_size=row.part_size,
            )
        )
    return grouped


def _inspections_by_seq(conn: Connection, seqs: Sequence[int]) -> dict[int, InspectionRecord]:
    if not seqs:
        return {}
    rows = conn.execute(
        select(inspections.c.traceset_seq, inspections.c.status, inspections.c.result).where(
            inspections.c.traceset_seq.in_(seqs)
        )
    )
    return {
        row.traceset_seq: InspectionRecord(row.status, row.result.encode() if row.result else None)
        for row in rows
    }


def _traceset(
    row: Row[Any], stored_files: list[StoredFile], inspection: InspectionRecord | None = None
) -> Traceset:
    created, updated = _utc(row.created_at), _utc(row.updated_at)
    assert created is not None and updated is not None
    metadata = row.workload_metadata
    return Traceset(
        seq=row.seq,
        id=row.id,
        workspace=row.workspace,
        name=row.name,
        description=row.description,
        status=row.status,
        created_at=created,
        updated_at=updated,
        promoted_at=_utc(row.promoted_at),
        workload_metadata=metadata.encode() if metadata is not None else None,
        rank_count=row.rank_count,
        files=stored_files,
        inspection=inspection,
    )


def get_traceset(
    conn: Connection, *, workspace: str | None, traceset_id: str, for_update: bool = False
) -> Traceset | None:
    """The traceset ``traceset_id`` of ``workspace`` (of any workspace when None: signed URLs)."""
    query = select(tracesets).where(tracesets.c.id == traceset_id)
    if workspace is not None:
        query = query.where(tracesets.c.workspace == workspace)
    if for_update and conn.dialect.name != "sqlite":
        query = query.with_for_update()
    row = conn.execute(query).one_or_none()
    if row is None:
        return None
    return _traceset(
        row,
        _files_by_seq(conn, [row.seq]).get(row.seq, []),
        _inspections_by_seq(conn, [row.seq]).get(row.seq),
    )


def list_tracesets(
    conn: Connection, *, workspace: str, where: ListFilter, limit: int, before_seq: int | None
) -> list[Traceset]:
    """Newest first. With filters, the first one given picks candidates from its own
    (workspace, column, seq) index, newest first and in batches, and the others are
    checked on those rows. Left to itself, PostgreSQL may instead walk the primary key
    backwards filtering rows, which takes seconds when every match is old; an
    index-only scan of the filter's index is cheap whatever the rows' age.
    """
    given = [
        (column, value)
        for column, value in (
            (tracesets.c.workload_name, where.workload_name),
            (tracesets.c.workload_family, where.workload_family),
            (tracesets.c.global_batch_size, where.global_batch_size),
            (tracesets.c.rank_count, where.rank_count),
            (tracesets.c.status, where.status),
        )
        if value is not None
    ]
    query = select(tracesets).where(tracesets.c.workspace == workspace)
    for column, value in given[1:]:
        query = query.where(column == value)
    if where.inspected_ok is not None:
        query = query.where(
            tracesets.c.seq.in_(
                select(inspections.c.traceset_seq).where(inspections.c.ok.is_(where.inspected_ok))
            )
        )
    if where.ranks_consistent is not None:
        query = query.where(
            tracesets.c.seq.in_(
                select(inspections.c.traceset_seq).where(
                    inspections.c.consistent.is_(where.ranks_consistent)
                )
            )
        )
    if not given:
        if before_seq is not None:
            query = query.where(tracesets.c.seq < before_seq)
        rows = list(conn.execute(query.order_by(tracesets.c.seq.desc()).limit(limit)).all())
    else:
        rows = _filtered_rows(conn, query, workspace, given[0], limit, before_seq)
    seqs = [row.seq for row in rows]
    by_seq, inspected = _files_by_seq(conn, seqs), _inspections_by_seq(conn, seqs)
    return [_traceset(row, by_seq.get(row.seq, []), inspected.get(row.seq)) for row in rows]


def _filtered_rows(
    conn: Connection,
    query: Select[Any],
    workspace: str,
    lead: tuple[Any, Any],
    limit: int,
    before_seq: int | None,
) -> list[Row[Any]]:
    column, value = lead
    batch = max(4 * limit, 200)
    rows: list[Row[Any]] = []
    while len(rows) < limit:
        candidates = [
            seq
            for (seq,) in conn.execute(
                select(tracesets.c.seq)
                .where(
                    tracesets.c.workspace == workspace,
                    column == value,
                    *([tracesets.c.seq < before_seq] if before_seq is not None else []),
                )
                .order_by(tracesets.c.seq.desc())
                .limit(batch)
            )
        ]
        if not candidates:
            break
        page = query.where(tracesets.c.seq.in_(candidates)).order_by(tracesets.c.seq.desc())
        rows.extend(conn.execute(page.limit(limit - len(rows))).all())
        if len(candidates) < batch:
            break
        before_seq = candidates[-1]
    return rows


def mark_received(conn: Connection, *, seq: int, idx: int, sha256: str, now: datetime) -> None:
    conn.execute(
        update(files)
        .where(files.c.traceset_seq == seq, files.c.idx == idx)
        .values(received=True, sha256=sha256, received_at=now)
    )


def set_upload(
    conn: Connection, *, seq: int, idx: int, upload_id: str | None, part_size: int | None
) -> None:
    conn.execute(
        update(files)
        .where(files.c.traceset_seq == seq, files.c.idx == idx)
        .values(upload_id=upload_id, part_size=part_size)
    )


def pending_before(conn: Connection, cutoff: datetime, limit: int) -> list[tuple[str, str]]:
    """(workspace, id) of pending tracesets created before ``cutoff``, oldest first."""
    rows = conn.execute(
        select(tracesets.c.workspace, tracesets.c.id)
        .where(tracesets.c.status == "pending", tracesets.c.created_at < cutoff)
        .order_by(tracesets.c.created_at)
        .limit(limit)
    )
    return [(row.workspace, row.id) for row in rows]


def promote(conn: Connection, *, seq: int, workload_metadata: bytes | None, now: datetime) -> None:
    conn.execute(
        update(tracesets)
        .where(tracesets.c.seq == seq)
        .values(
            status="promoted",
            promoted_at=now,
            updated_at=now,
            workload_metadata=workload_metadata.decode() if workload_metadata is not None else None,
        )
    )


def set_status(conn: Connection, *, seq: int, status: Status, now: datetime) -> None:
    conn.execute(
        update(tracesets).where(tracesets.c.seq == seq).values(status=status, updated_at=now)
    )


def delete_traceset(conn: Connection, *, seq: int) -> None:
    conn.execute(delete(files).where(files.c.traceset_seq == seq))
    conn.execute(delete(tracesets).where(tracesets.c.seq == seq))


def find_idempotency_key(
    conn: Connection, *, workspace: str, key: str, since: datetime
) -> tuple[str, str] | None:
    """(request sha256, traceset id) of ``key`` if it was used since ``since``; older uses are dropped."""
    where = (idempotency_keys.c.workspace == workspace, idempotency_keys.c.key == key)
    row = conn.execute(select(idempotency_keys).where(*where)).one_or_none()
    if row is None:
        return None
    if _utc(row.created_at) < since:  # type: ignore[operator]
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


# -- inspections -------------------------------------------------------------------------


def queue_inspection(conn: Connection, *, seq: int) -> None:
    conn.execute(insert(inspections).values(traceset_seq=seq, status="pending", attempts=0))


def claim_inspection(
    conn: Connection, *, now: datetime, stale_before: datetime
) -> tuple[int, int] | None:
    """Take one inspection to run: a pending one, or one whose claim went stale.

    Returns (traceset seq, attempts so far). PostgreSQL skips rows other processes
    hold; SQLite's write transaction is already exclusive.
    """
    candidate = (
        select(inspections.c.traceset_seq, inspections.c.attempts)
        .where(
            (inspections.c.status == "pending")
            | ((inspections.c.status == "running") & (inspections.c.claimed_at < stale_before))
        )
        .order_by(inspections.c.traceset_seq)
        .limit(1)
    )
    if conn.dialect.name != "sqlite":
        candidate = candidate.with_for_update(skip_locked=True)
    row = conn.execute(candidate).one_or_none()
    if row is None:
        return None
    conn.execute(
        update(inspections)
        .where(inspections.c.traceset_seq == row.traceset_seq)
        .values(status="running", claimed_at=now, attempts=row.attempts + 1)
    )
    return row.traceset_seq, row.attempts + 1


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
) -> None:
    """Record an inspection's result, and every trace's figures in rank order."""
    conn.execute(
        update(inspections)
        .where(inspections.c.traceset_seq == seq)
        .values(
            status=status, ok=ok, consistent=consistent, result=result.decode(), finished_at=now
        )
    )
    conn.execute(delete(inspection_ranks).where(inspection_ranks.c.traceset_seq == seq))
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


def renew_inspection_claim(conn: Connection, *, seq: int, now: datetime) -> None:
    """Keep a running inspection's claim fresh, so a long one is not taken over."""
    conn.execute(
        update(inspections)
        .where(inspections.c.traceset_seq == seq, inspections.c.status == "running")
        .values(claimed_at=now)
    )


def release_inspection(conn: Connection, *, seq: int) -> None:
    """Put a claimed inspection back to pending (its run failed; it will be tried again)."""
    conn.execute(
        update(inspections).where(inspections.c.traceset_seq == seq).values(status="pending")
    )


def traceset_by_seq(conn: Connection, seq: int) -> Traceset | None:
    row = conn.execute(select(tracesets).where(tracesets.c.seq == seq)).one_or_none()
    if row is None:
        return None
    return _traceset(row, _files_by_seq(conn, [seq]).get(seq, []))
