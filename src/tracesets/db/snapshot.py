"""A copy of a SQLite database taken while the service writes to it, and what it lists.

The copy is made with SQLite's online backup API in one step: one read transaction over
the whole database, which in WAL mode never waits for a writer nor makes one wait, so
the copy is the database as of one commit however busy the service is. A backup then
reads the copy (never the live database) to know which files to take along, and edits
the copy alone when a file it names has gone meanwhile.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import (
    Engine,
    bindparam,
    create_engine,
    delete,
    event,
    false,
    func,
    select,
    text,
    true,
    update,
)
from sqlalchemy.exc import DBAPIError

from tracesets.db.tables import files, tracesets
from tracesets.vocabulary import STATUSES, Status

#: Seconds the copy waits for a writer that holds the database (a checkpoint, a migration).
_WAIT = 30


@dataclass(frozen=True, slots=True)
class Received:
    """A file whose bytes the database says the store holds."""

    traceset_id: str
    status: Status
    seq: int
    idx: int
    size: int
    sha256: str


def copy_live(source: Path, target: Path) -> None:
    """Copy the database at ``source`` into a new file ``target``, as of one commit; the
    copy keeps no WAL beside it (one file: what a backup folder holds)."""
    with (
        closing(sqlite3.connect(source, timeout=_WAIT)) as live,
        closing(sqlite3.connect(target)) as copy,
    ):
        live.backup(copy)  # pages=-1: all at once, one snapshot
        copy.execute("PRAGMA journal_mode=DELETE")


def copy_file(source: Path, target: Path) -> None:
    """Copy a database no one writes to (a backup's) into a new file ``target``."""
    with closing(sqlite3.connect(source)) as held, closing(sqlite3.connect(target)) as copy:
        held.backup(copy)


class Snapshot:
    """A copied database: what it lists and the edits a backup makes to it."""

    def __init__(self, path: Path) -> None:
        self.engine: Engine = create_engine(f"sqlite:///{path}")

        @event.listens_for(self.engine, "connect")
        def on_connect(dbapi_connection: Any, _record: Any) -> None:
            # Dropping a traceset drops its inspection's rows with it, as in the service.
            dbapi_connection.execute("PRAGMA foreign_keys=ON")

    def check(self) -> str | None:
        """None when SQLite finds the file sound; else what it found wrong."""
        with self.engine.connect() as conn:
            found = [str(row[0]) for row in conn.exec_driver_sql("PRAGMA quick_check")]
        return None if found == ["ok"] else "; ".join(found[:5])

    def revision(self) -> str | None:
        """The migration the copy is at; None when it has none (not a Tracesets database)."""
        with self.engine.connect() as conn:
            try:
                row = conn.execute(text("SELECT version_num FROM alembic_version")).first()
            except DBAPIError:  # no such table
                return None
        return None if row is None else str(row[0])

    def received(self) -> Iterator[Received]:
        """Every file the copy says was received, traceset by traceset: read as it is
        iterated, so a store of millions of files is never held in memory at once."""
        query = (
            select(
                tracesets.c.id,
                tracesets.c.status,
                files.c.traceset_seq,
                files.c.idx,
                files.c.size,
                files.c.sha256,
            )
            .join(tracesets, tracesets.c.seq == files.c.traceset_seq)
            .where(files.c.received == true(), files.c.sha256.is_not(None))
            .order_by(files.c.traceset_seq, files.c.idx)
        )
        with self.engine.connect() as conn:
            for row in conn.execution_options(stream_results=True).execute(query):
                yield Received(*row)

    def drop(self, seqs: Iterable[int]) -> None:
        """Remove tracesets from the copy (their files, inspections and all)."""
        chosen = sorted(set(seqs))
        if not chosen:
            return
        with self.engine.begin() as conn:
            conn.execute(delete(files).where(files.c.traceset_seq.in_(chosen)))
            conn.execute(delete(tracesets).where(tracesets.c.seq.in_(chosen)))

    def unreceive(self, gone: Iterable[tuple[int, int]]) -> None:
        """Mark files of pending tracesets as not received: their client sends them again."""
        rows = [{"s": seq, "i": idx} for seq, idx in gone]
        if not rows:
            return
        statement = (
            update(files)
            .where(files.c.traceset_seq == bindparam("s"), files.c.idx == bindparam("i"))
            .values(received=false(), sha256=None, received_at=None)
        )
        with self.engine.begin() as conn:
            conn.execute(statement, rows)

    def totals(self) -> tuple[dict[str, int], int, int]:
        """Tracesets by status, then the received files and their bytes."""
        by_status = select(tracesets.c.status, func.count()).group_by(tracesets.c.status)
        received = select(func.count(), func.coalesce(func.sum(files.c.size), 0)).where(
            files.c.received == true(), files.c.sha256.is_not(None)
        )
        with self.engine.connect() as conn:
            found = {str(status): int(n) for status, n in conn.execute(by_status)}
            count, size = conn.execute(received).one()
        return {status: found.get(status, 0) for status in STATUSES}, int(count), int(size)

    def close(self) -> None:
        self.engine.dispose()
