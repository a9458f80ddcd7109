"""Each file's name key (NFC, case-folded) is unique in its traceset, in the database:
whatever path writes files, two spellings of one name cannot both be stored. Files stored
before the keys keep theirs, the first of a traceset's spellings its key."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

import pytest
from alembic import command
from alembic.config import Config
from sqlalchemy import Connection, insert, select, text
from sqlalchemy.exc import IntegrityError

from tests.server import own_database
from tracesets.db import engine, file_rows
from tracesets.db.engine import Database, head_revision, normalize_url, sqlite_url
from tracesets.db.tables import files, tracesets
from tracesets.uploadrequest import FileSpec

WHEN = datetime(2026, 12, 2, tzinfo=UTC)


def database_url(tmp_path: Path) -> str:
    """A new database on the run's backend: SQLite, or PostgreSQL when the run has one."""
    run = os.environ.get("TRACESETS_TEST_DATABASE_URL")
    return normalize_url(own_database(run)) if run else sqlite_url(tmp_path)


def a_traceset(conn: Connection, traceset_id: str) -> int:
    row = {"id": traceset_id, "workspace": "w", "name": "job", "status": "pending"}
    created = insert(tracesets).returning(tracesets.c.seq)
    seq: int = conn.execute(created, {**row, "created_at": WHEN, "updated_at": WHEN}).scalar_one()
    return seq


def test_two_spellings_of_one_name_cannot_both_be_stored(tmp_path: Path) -> None:
    db = Database(database_url(tmp_path))
    db.migrate()
    spec = FileSpec("Rank0.json", 1, "primary", None)
    with db.write() as conn:
        seq, other = a_traceset(conn, "a" * 32), a_traceset(conn, "b" * 32)
        file_rows.insert_files(conn, seq=seq, specs=[spec], first_idx=0)
        file_rows.insert_files(conn, seq=other, specs=[spec], first_idx=0)  # another traceset
    with pytest.raises(IntegrityError), db.write() as conn:
        lower = FileSpec("rank0.json", 1, "primary", None)
        file_rows.insert_files(conn, seq=seq, specs=[lower], first_idx=1)
    db.dispose()


def test_files_stored_before_the_keys_get_theirs_the_first_spelling_first(
    tmp_path: Path,
) -> None:
    url = database_url(tmp_path)
    config = Config()
    config.set_main_option("script_location", str(Path(engine.__file__).with_name("migrations")))
    config.set_main_option("sqlalchemy.url", url)
    db = Database(url)
    with db.engine.connect() as conn:
        config.attributes["connection"] = conn
        command.upgrade(config, "0011")  # the revision before the keys
        conn.commit()
    names = ["b/x.json", "Rank0.json", "caf\u00e9", "rank0.json", "cafe\u0301", "RANK0.JSON"]
    with db.engine.begin() as conn:
        seq, other = a_traceset(conn, "a" * 32), a_traceset(conn, "b" * 32)
        for traceset, listed in ((seq, names), (other, ["rank0.json"])):
            for idx, name in enumerate(listed):
                row = {"traceset_seq": traceset, "idx": idx, "name": name, "size": 1}
                conn.execute(
                    text(
                        "INSERT INTO files (traceset_seq, idx, name, size, role, received) "
                        "VALUES (:traceset_seq, :idx, :name, :size, 'primary', :received)"
                    ),
                    {**row, "received": False},
                )
    db.migrate()
    assert db._revision() == head_revision()
    with db.read() as conn:
        keys = conn.execute(
            select(files.c.traceset_seq, files.c.name, files.c.name_key).order_by(
                files.c.traceset_seq, files.c.idx
            )
        ).all()
    assert [tuple(k) for k in keys] == [
        (seq, "b/x.json", "b/x.json"),
        (seq, "Rank0.json", "rank0.json"),
        (seq, "caf\u00e9", "caf\u00e9"),
        (seq, "rank0.json", None),
        (seq, "cafe\u0301", None),
        (seq, "RANK0.JSON", None),
        (other, "rank0.json", "rank0.json"),
    ]
    db.dispose()
