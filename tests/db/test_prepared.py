"""Inserts on SQLite's driver connection write what SQLAlchemy's own execution writes."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import bindparam, insert, select
from sqlalchemy.exc import IntegrityError

from tracesets.db import prepared
from tracesets.db.engine import Database
from tracesets.db.file_rows import (
    _MARK_ONE_RECEIVED,
    _MARK_RECEIVED,
    INSERT_FILES,
    file_row,
    mark_all_received,
    mark_received,
)
from tracesets.db.tables import files, tokens, tracesets
from tracesets.records import Checked, StoredFile

WHEN = datetime(2026, 12, 1, 11, 22, 33, 456789, tzinfo=UTC)


@pytest.fixture
def db(tmp_path: Path) -> Database:
    database = Database(f"sqlite:///{tmp_path / 'p.db'}")
    database.migrate()
    return database


def traceset_row(traceset_id: str) -> dict[str, object]:
    return {
        "id": traceset_id,
        "workspace": "w",
        "name": "n",
        "description": None,
        "status": "pending",
        "created_at": WHEN,
        "updated_at": WHEN,
        "workload_metadata": '{"shape":{"rankCount":2}}',
        "rank_count": 2,
    }


def stored(idx: int) -> StoredFile:
    return StoredFile(idx, f"rank{idx}.json", 10 + idx, "primary", "a" * 64, None, False)


def test_rows_read_back_as_sqlalchemy_wrote_them(db: Database) -> None:
    statement = insert(tracesets).returning(tracesets.c.seq)
    with db.write() as conn:
        driver_seq = prepared.insert_one(conn, statement, traceset_row("a" * 32))
        prepared.execute_many(conn, INSERT_FILES, [file_row(driver_seq, stored(i)) for i in (0, 1)])
        orm_seq = conn.execute(statement, traceset_row("b" * 32)).scalar_one()
        conn.execute(INSERT_FILES, [file_row(orm_seq, stored(i)) for i in (0, 1)])
    assert orm_seq == driver_seq + 1
    with db.read() as conn:
        heads = conn.execute(select(tracesets).order_by(tracesets.c.seq)).all()
        rows = conn.execute(select(files).order_by(files.c.traceset_seq, files.c.idx)).all()
    by_driver, by_sqlalchemy = (row._asdict() for row in heads)
    assert by_driver["created_at"] == by_sqlalchemy["created_at"]
    assert by_driver["created_at"].replace(tzinfo=UTC) == WHEN
    assert {**by_driver, "seq": 0, "id": ""} == {**by_sqlalchemy, "seq": 0, "id": ""}
    assert [row._asdict() | {"traceset_seq": 0} for row in rows[:2]] == [
        row._asdict() | {"traceset_seq": 0} for row in rows[2:]
    ]
    assert rows[0].received is False


def test_a_driver_error_is_raised_as_sqlalchemys(db: Database) -> None:
    statement = insert(tracesets).returning(tracesets.c.seq)
    with pytest.raises(IntegrityError), db.write() as conn:
        prepared.insert_one(conn, statement, traceset_row("c" * 32))
        prepared.insert_one(conn, statement, traceset_row("c" * 32))  # the id is unique
    with db.read() as conn:
        assert conn.execute(select(tracesets)).all() == []  # the transaction rolled back


def test_a_statement_needing_a_default_goes_through_sqlalchemy(db: Database) -> None:
    """A row without ``received`` needs the column's default, which only SQLAlchemy adds."""
    statement = insert(tracesets).returning(tracesets.c.seq)
    row = file_row(0, stored(0))
    del row["received"]
    with db.write() as conn:
        seq = prepared.insert_one(conn, statement, traceset_row("d" * 32))
        without_default = {**row, "traceset_seq": seq}
        prepared.execute_many(conn, INSERT_FILES, [without_default])
    with db.read() as conn:
        assert conn.execute(select(files.c.received)).scalar_one() is False
    assert prepared._COMPILED[(INSERT_FILES, tuple(without_default))] is None


def test_another_set_of_parameters_compiles_its_own_statement(db: Database) -> None:
    """Statements are cached by their parameter names: another set compiles anew."""
    statement = insert(tokens).returning(tokens.c.id)
    base = {"workspace": "w", "token_hash": "h1", "created_at": WHEN, "scopes": "read"}
    with db.write() as conn:
        first = prepared.insert_one(conn, statement, base)
        second = prepared.insert_one(conn, statement, {**base, "token_hash": "h2", "name": "n"})
    with db.read() as conn:
        names = conn.execute(select(tokens.c.name).order_by(tokens.c.id)).scalars().all()
    assert (first, second, names) == (1, 2, [None, "n"])


def test_updates_and_reads_on_the_driver_write_and_read_as_sqlalchemy(db: Database) -> None:
    """A file marked received, all files marked at complete, and a status read, run on
    the driver, against the same statements run by SQLAlchemy on a twin traceset."""
    statement = insert(tracesets).returning(tracesets.c.seq)
    checked = {i: Checked(f"{i}" * 64, "sha256", f"{i}" * 64) for i in (0, 1)}
    with db.write() as conn:
        seqs = [prepared.insert_one(conn, statement, traceset_row(c * 32)) for c in "ef"]
        for seq in seqs:
            prepared.execute_many(conn, INSERT_FILES, [file_row(seq, stored(i)) for i in (0, 1)])
        driven, plain = seqs
        mark_received(conn, seq=driven, idx=0, sha256="f" * 64, now=WHEN)
        mark_all_received(conn, seq=driven, checked=checked, now=WHEN)
        conn.execute(
            _MARK_ONE_RECEIVED, {"b_seq": plain, "b_idx": 0, "b_sha256": "f" * 64, "b_now": WHEN}
        )
        conn.execute(
            _MARK_RECEIVED,
            [
                {"b_seq": plain, "b_idx": i, "b_sha256": c.sha256, "b_now": WHEN}
                | {"b_by": c.by, "b_checksum": c.checksum}
                for i, c in checked.items()
            ],
        )
        status = select(tracesets.c.status).where(tracesets.c.seq == bindparam("seq"))
        assert prepared.scalar(conn, status, {"seq": driven}) == "pending"
        assert prepared.scalar(conn, status, {"seq": 999}) is None
    with db.read() as conn:
        rows = conn.execute(select(files).order_by(files.c.traceset_seq, files.c.idx)).all()
    by_driver, by_sqlalchemy = rows[:2], rows[2:]
    assert [r._asdict() | {"traceset_seq": 0} for r in by_driver] == [
        r._asdict() | {"traceset_seq": 0} for r in by_sqlalchemy
    ]
    assert all(r.received is True and r.received_at is not None for r in by_driver)
