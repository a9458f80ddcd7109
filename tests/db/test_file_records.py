"""A file's record is built from its row by position (``FILE_COLUMNS``): every way of
reading files gives what the row's columns say, by name, in every state a file is in."""

from __future__ import annotations

from dataclasses import fields
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import insert, select, update

from tracesets.db import file_rows
from tracesets.db.engine import Database
from tracesets.db.tables import files, tracesets
from tracesets.records import StoredFile

WHEN = datetime(2026, 12, 2, 3, 4, 5, tzinfo=UTC)


def by_name(row: object) -> StoredFile:
    """The record as the columns name it: each field from the column of its name."""
    values = {f.name: getattr(row, f.name) for f in fields(StoredFile)}
    return StoredFile(**{**values, "received": bool(values["received"])})


def test_every_read_of_files_gives_what_their_columns_say(tmp_path: Path) -> None:
    db = Database(f"sqlite:///{tmp_path / 'f.db'}")
    db.migrate()
    with db.write() as conn:
        seq = conn.execute(
            insert(tracesets).returning(tracesets.c.seq),
            {
                "id": "t" * 32,
                "workspace": "w",
                "name": "job",
                "status": "pending",
                "created_at": WHEN,
                "updated_at": WHEN,
            },
        ).scalar_one()
        specs = [(0, "rank0.json", 10, "primary"), (1, "logs/run.txt", 0, "supporting")]
        specs += [(2, "rank1.json", 1 << 40, "primary")]
        for idx, name, size, role in specs:
            conn.execute(
                insert(files),
                {
                    "traceset_seq": seq,
                    "idx": idx,
                    "name": name,
                    "name_key": name.upper(),  # not the service's keys: each read by its own
                    "size": size,
                    "role": role,
                    "sha256_declared": None if idx == 1 else f"{idx}" * 64,
                    "received": False,
                },
            )
        # One received and checked, one in a multipart upload, one as declared.
        conn.execute(
            update(files)
            .where(files.c.idx == 0)
            .values(
                received=True,
                sha256="0" * 64,
                received_at=WHEN,
                checked_by="sha256",
                checked_checksum="0" * 64,
            )
        )
        conn.execute(
            update(files).where(files.c.idx == 2).values(upload_id="up-2", part_size=64 << 20)
        )
    with db.read() as conn:
        expected = [by_name(row) for row in conn.execute(select(files).order_by(files.c.idx))]
        assert file_rows.files_from(conn, seq=seq, start=0, limit=None) == expected
        assert file_rows.files_from(conn, seq=seq, start=1, limit=1) == expected[1:2]
        named, keyed = file_rows.files_named(
            conn, seq=seq, names=["rank1.json", "rank0.json"], keys=["LOGS/RUN.TXT", "rank1.json"]
        )
        assert named == {"rank0.json": expected[0], "rank1.json": expected[2]}
        assert keyed == {"LOGS/RUN.TXT": expected[1]}
        in_folders = file_rows.files_in_folders(conn, seq=seq, folders=["LOGS", "RANK0.JSON"])
        assert in_folders == {"LOGS": "logs/run.txt"}
    assert expected[0].checked_by == "sha256" and expected[2].upload_id == "up-2"
    for record in expected:
        for found in (
            file_rows.one_file(db, traceset_id="t" * 32, workspace="w", idx=record.idx),
            file_rows.one_file(db, traceset_id="t" * 32, workspace=None, name=record.name),
        ):
            assert found is not None
            assert (found.seq, found.traceset_id, found.status) == (seq, "t" * 32, "pending")
            assert found.file == record
    assert file_rows.one_file(db, traceset_id="t" * 32, workspace="other", idx=0) is None
