"""One file's row, or a page of them: what a PUT, a redirect and complete read and write."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from datetime import UTC, datetime
from typing import Any, Final

from sqlalchemy import (
    Connection,
    Row,
    Select,
    TextClause,
    bindparam,
    func,
    insert,
    null,
    select,
    text,
    true,
    update,
)

from tracesets.db import prepared
from tracesets.db.engine import Database
from tracesets.db.tables import files, tracesets
from tracesets.filenames import same_name_key
from tracesets.records import (
    Checked,
    StoredFile,
)
from tracesets.uploadrequest import FileSpec
from tracesets.vocabulary import Status

#: Names compared per statement, well under every backend's limit on bound parameters.
_NAMES_PER_QUERY = 1_000


def utc(value: datetime | None) -> datetime | None:
    # SQLite hands back naive datetimes; everything stored is UTC.
    if value is None or value.tzinfo is not None:
        return value
    return value.replace(tzinfo=UTC)


#: A file's columns in ``StoredFile``'s order, so that rows of them are built by position:
#: by name, with every column read (the time of receipt parsed as a date), the records of
#: a 100,000-file traceset took 1.5 s to build, against 0.6.
FILE_COLUMNS: Final = (
    files.c.idx,
    files.c.name,
    files.c.size,
    files.c.role,
    files.c.sha256_declared,
    files.c.sha256,
    files.c.received,
    files.c.upload_id,
    files.c.part_size,
    files.c.checked_by,
    files.c.checked_checksum,
)


def _stored(values: Sequence[Any]) -> StoredFile:
    """A file from the values of ``FILE_COLUMNS``, by position."""
    idx, name, size, role, declared, sha256, got, upload_id, part_size, by, checksum = values
    return StoredFile(
        idx, name, size, role, declared, sha256, bool(got), upload_id, part_size, by, checksum
    )


def files_named(
    conn: Connection, *, seq: int, names: Sequence[str], keys: Sequence[str]
) -> tuple[dict[str, StoredFile], dict[str, StoredFile]]:
    """The traceset's files named one of ``names``, by name, and those whose name key is
    one of ``keys``, by key: read through the indexes of names and keys, never the whole
    traceset."""
    named: dict[str, StoredFile] = {}
    keyed: dict[str, StoredFile] = {}
    for column, values, found in ((files.c.name, names, named), (files.c.name_key, keys, keyed)):
        for start in range(0, len(values), _NAMES_PER_QUERY):
            chunk = values[start : start + _NAMES_PER_QUERY]
            rows = conn.execute(
                select(*FILE_COLUMNS, files.c.name_key).where(
                    files.c.traceset_seq == seq, column.in_(chunk)
                )
            )
            for row in rows:
                found[row.name if found is named else row.name_key] = _stored(row[:-1])
    return named, keyed


#: Folders looked into per statement, each a range of the (traceset, key) index.
_FOLDERS_PER_QUERY = 500


def _folders_query(dialect: str, count: int) -> TextClause:
    """One file in each folder asked, if any: a range of the index each (a statement of
    ORed ranges built through SQLAlchemy's expressions took 80 ms for 200 folders).
    PostgreSQL compares the keys in the column's collation, byte order (``C``)."""
    collate = ' COLLATE "C"' if dialect == "postgresql" else ""
    rows = ", ".join(f"(:k{at})" for at in range(count))
    return text(
        f"WITH asked(folder) AS (VALUES {rows}) "
        "SELECT folder, (SELECT name FROM files WHERE traceset_seq = :seq "
        f"AND name_key >= folder || '/'{collate} AND name_key < folder || '0'{collate} "
        "LIMIT 1) FROM asked"
    )


def files_in_folders(conn: Connection, *, seq: int, folders: Sequence[str]) -> dict[str, str]:
    """A file the traceset holds in each of ``folders`` (name keys) that holds any: folder
    → that file's name. A folder ``k``'s files are the keys from ``k/`` up to ``k0``
    (``0`` follows ``/``), in byte order on every backend."""
    found: dict[str, str] = {}
    for start in range(0, len(folders), _FOLDERS_PER_QUERY):
        chunk = folders[start : start + _FOLDERS_PER_QUERY]
        params: dict[str, Any] = {f"k{at}": folder for at, folder in enumerate(chunk)}
        query = _folders_query(conn.dialect.name, len(chunk))
        for folder, name in conn.execute(query, {**params, "seq": seq}):
            if name is not None:
                found[folder] = name
    return found


def file_count(conn: Connection, *, seq: int) -> int:
    """How many files the traceset declares: indices run from 0 without gaps."""
    last = conn.execute(select(func.max(files.c.idx)).where(files.c.traceset_seq == seq))
    top: int | None = last.scalar_one()
    return 0 if top is None else top + 1


INSERT_FILES = insert(files)
#: A file record's fields, each a column of its row.
_FILE_FIELDS = tuple(f.name for f in fields(StoredFile))


def file_row(seq: int, stored: StoredFile) -> dict[str, Any]:
    """The row of ``stored`` in traceset ``seq`` (``asdict`` without its deep copies)."""
    row = {name: getattr(stored, name) for name in _FILE_FIELDS}
    row["traceset_seq"] = seq
    row["name_key"] = same_name_key(stored.name)
    return row


def declared(
    idx: int, spec: FileSpec, upload_id: str | None = None, part_size: int | None = None
) -> StoredFile:
    """A file as its declaration stores it: not received, its digest the one declared."""
    return StoredFile(
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


def insert_files(
    conn: Connection, *, seq: int, specs: Sequence[FileSpec], first_idx: int
) -> list[StoredFile]:
    """Declare more files of a pending traceset, at indices from ``first_idx`` on."""
    stored = [declared(first_idx + offset, spec) for offset, spec in enumerate(specs)]
    if stored:
        prepared.execute_many(conn, INSERT_FILES, [file_row(seq, f) for f in stored])
    return stored


@dataclass(frozen=True, slots=True)
class OneFile:
    """One file of a traceset, with what a per-file request needs of the traceset."""

    seq: int
    traceset_id: str
    status: Status
    file: StoredFile


_ONE_FILE = select(tracesets.c.seq, tracesets.c.id, tracesets.c.status, *FILE_COLUMNS).join_from(
    tracesets, files, files.c.traceset_seq == tracesets.c.seq
)


def _one_file_query(in_workspace: bool, by_idx: bool) -> Select[Any]:
    query = _ONE_FILE.where(tracesets.c.id == bindparam("traceset_id"))
    if in_workspace:
        query = query.where(tracesets.c.workspace == bindparam("workspace"))
    key = files.c.idx == bindparam("idx") if by_idx else files.c.name == bindparam("name")
    return query.where(key)  # one row: an index, and a name declared once, name one file


#: ``one_file``'s four statements (in a workspace or not, by index or by name), built once.
_ONE_FILE_BY = {
    (in_workspace, by_idx): _one_file_query(in_workspace, by_idx)
    for in_workspace in (False, True)
    for by_idx in (False, True)
}


def one_file(
    db: Database,
    *,
    traceset_id: str,
    workspace: str | None,
    idx: int | None = None,
    name: str | None = None,
) -> OneFile | None:
    """One file by index or by name, and its traceset's status: two index lookups, however
    many files the traceset holds (per-file requests never load the others). One read of
    the last commit (``Database.fetch_one``): in a transaction through SQLAlchemy, it was
    a quarter of a small PUT's time on the event loop."""
    params: dict[str, Any] = {"traceset_id": traceset_id}
    if workspace is not None:
        params["workspace"] = workspace
    if idx is not None:
        params["idx"] = idx
    else:
        params["name"] = name
    row = db.fetch_one(_ONE_FILE_BY[(workspace is not None, idx is not None)], params)
    if row is None:
        return None
    seq, found_id, status = row[:3]
    return OneFile(seq, found_id, status, _stored(row[3:]))


_STATUS_OF = select(tracesets.c.status).where(tracesets.c.seq == bindparam("seq"))
_STATUS_OF_LOCKED = _STATUS_OF.with_for_update(read=True)
_DIGEST_OF = select(files.c.sha256).where(
    files.c.traceset_seq == bindparam("seq"), files.c.idx == bindparam("idx")
)


def adopt_received(
    conn: Connection, *, seq: int, idx: int, sha256: str, now: datetime
) -> tuple[Status, str | None] | None:
    """Record bytes that arrived for a file, only while its traceset is pending.

    Returns the traceset's status and the file's digest as recorded after this call
    (None: the traceset is gone). The traceset's row is read under a shared lock that
    ``complete`` (an exclusive one) waits for and that makes this call wait for it, so
    a file changes only before ``complete`` has read it, never after; on SQLite the
    write transaction is already exclusive.
    """
    status_query = _STATUS_OF if conn.dialect.name == "sqlite" else _STATUS_OF_LOCKED
    status: Status | None = prepared.scalar(conn, status_query, {"seq": seq})
    if status is None:
        return None
    if status == "pending":
        mark_received(conn, seq=seq, idx=idx, sha256=sha256, now=now)
        return status, sha256
    recorded: str | None = prepared.scalar(conn, _DIGEST_OF, {"seq": seq, "idx": idx})
    return status, recorded


_MARK_ONE_RECEIVED = (
    update(files)
    .where(files.c.traceset_seq == bindparam("b_seq"), files.c.idx == bindparam("b_idx"))
    .values(received=true(), sha256=bindparam("b_sha256"), received_at=bindparam("b_now"))
)


def mark_received(conn: Connection, *, seq: int, idx: int, sha256: str, now: datetime) -> None:
    row = {"b_seq": seq, "b_idx": idx, "b_sha256": sha256, "b_now": now}
    prepared.execute_many(conn, _MARK_ONE_RECEIVED, [row])


_MARK_RECEIVED = (
    update(files)
    .where(files.c.traceset_seq == bindparam("b_seq"), files.c.idx == bindparam("b_idx"))
    .values(  # constants as SQL, so every value is the caller's and the driver binds them
        received=true(),
        sha256=bindparam("b_sha256"),
        received_at=bindparam("b_now"),
        checked_by=bindparam("b_by"),
        checked_checksum=bindparam("b_checksum"),
        upload_id=null(),
        part_size=null(),
    )
)


_DIGESTS_OF = (
    select(files.c.idx, files.c.name, files.c.sha256, files.c.role)
    .where(files.c.traceset_seq == bindparam("seq"))
    .order_by(files.c.idx)
)


def digests(conn: Connection, *, seq: int) -> list[Row[Any]]:
    """Each file's (idx, name, sha256, role): what ``complete`` checks again under the
    traceset's lock, without building every file's record (1.7 s for 100,000 files)."""
    return list(conn.execute(_DIGESTS_OF, {"seq": seq}))


def mark_all_received(
    conn: Connection, *, seq: int, checked: Mapping[int, Checked], now: datetime
) -> None:
    """Record every file of ``checked`` (index → how its bytes were found whole) as
    received, its upload finished: one statement run for all of them (an executemany),
    not one round trip a file."""
    if checked:
        prepared.execute_many(
            conn,
            _MARK_RECEIVED,
            [
                {
                    "b_seq": seq,
                    "b_idx": idx,
                    "b_sha256": check.sha256,
                    "b_now": now,
                    "b_by": check.by,
                    "b_checksum": check.checksum,
                }
                for idx, check in checked.items()
            ],
        )


def set_upload(
    conn: Connection, *, seq: int, idx: int, upload_id: str | None, part_size: int | None
) -> None:
    conn.execute(
        update(files)
        .where(files.c.traceset_seq == seq, files.c.idx == idx)
        .values(upload_id=upload_id, part_size=part_size)
    )


_FILES_FROM = (
    select(*FILE_COLUMNS)
    .where(files.c.traceset_seq == bindparam("seq"), files.c.idx >= bindparam("start"))
    .order_by(files.c.idx)
)
_FILES_FROM_LIMITED = _FILES_FROM.limit(bindparam("limit"))


def files_from(conn: Connection, *, seq: int, start: int, limit: int | None) -> list[StoredFile]:
    """At most ``limit`` files (all with None) of a traceset from index ``start`` on, in
    index order."""
    params = {"seq": seq, "start": start}
    query = _FILES_FROM
    if limit is not None:
        query, params["limit"] = _FILES_FROM_LIMITED, limit
    return [_stored(row) for row in conn.execute(query, params)]
