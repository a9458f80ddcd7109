"""What a backup and a restore do with a store that lacks a file, a backup that lacks or
changed one, a data folder in use, and a backup of another schema: never a ready traceset
without its bytes, never a half-restored folder.

One service (SQLite, a local folder) holds two ready tracesets, one of whose files was
removed behind its back, as a traceset deleted while a backup runs leaves it.
"""

from __future__ import annotations

import json
import secrets
import shutil
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from alembic import command
from alembic.config import Config
from sqlalchemy import create_engine

from tests.flows import problems, upload
from tests.server import ServerProcess
from tests.test_backup_restore import client, downloaded, embedded, files_of, running
from tracesets.db.engine import head_revision

MIGRATIONS = Path(__file__).resolve().parents[1] / "src" / "tracesets" / "db" / "migrations"


@dataclass(frozen=True)
class Damaged:
    live: ServerProcess
    backup: Path
    token: str
    whole: str
    lost: str
    lost_url: str


@pytest.fixture(scope="module")
def damaged(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Damaged]:
    folder = tmp_path_factory.mktemp("damaged")
    live = embedded(folder / "live")
    with running(live):
        token = live.new_token("ws-" + secrets.token_hex(6))
        with client(live, token) as api:
            whole = upload(api, files_of("whole"))["id"]
            lost = upload(api, files_of("lost"))["id"]
            signed = api.get(f"/api/v1/tracesets/{lost}/files/rank1.json")
            assert signed.status_code == 307
        for stored in (live.data_dir / "blobs" / lost).glob("1.*"):
            stored.unlink()
        taken = live.cli("backup", str(folder / "backup"), "--data-dir", str(live.data_dir))
        assert taken.returncode == 0, taken.stderr
        yield Damaged(live, folder / "backup", token, whole, lost, signed.headers["location"])


def restore(damaged: Damaged, source: Path, target: Path) -> tuple[int, str]:
    done = damaged.live.cli("restore", str(source), "--data-dir", str(target))
    return done.returncode, done.stderr


def copied(damaged: Damaged, to: Path) -> Path:
    shutil.copytree(damaged.backup, to)
    return to


def test_a_ready_file_whose_bytes_are_gone_answers_a_404_saying_so(damaged: Damaged) -> None:
    answer = httpx.get(damaged.lost_url, timeout=60)
    assert answer.status_code == 404
    assert "bytes are missing" in problems(answer)[0]["message"]


def test_a_traceset_whose_bytes_went_during_the_backup_is_left_out_of_it(
    damaged: Damaged,
) -> None:
    manifest = json.loads((damaged.backup / "manifest.json").read_text())
    assert manifest["dropped"] == [damaged.lost]
    assert manifest["tracesets"] == {"pending": 0, "ready": 1, "promoted": 0}
    assert (manifest["files"], manifest["revision"]) == (2, head_revision())
    with closing(sqlite3.connect(damaged.backup / "tracesets.db")) as db:
        kept = db.execute("SELECT id FROM tracesets").fetchall()
    assert kept == [(damaged.whole,)]
    assert not (damaged.backup / "blobs" / damaged.lost).exists()


def test_a_restore_refuses_a_folder_that_holds_anything(damaged: Damaged, tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    code, said = restore(damaged, damaged.backup, tmp_path)
    assert code == 1
    assert "not an empty folder" in said
    assert [p.name for p in tmp_path.iterdir()] == ["notes.txt"]


def test_a_restore_refuses_a_backup_of_a_newer_schema(damaged: Damaged, tmp_path: Path) -> None:
    newer = copied(damaged, tmp_path / "newer")
    manifest = json.loads((newer / "manifest.json").read_text())
    (newer / "manifest.json").write_text(json.dumps({**manifest, "revision": "9999"}))
    code, said = restore(damaged, newer, tmp_path / "data")
    assert code == 1
    assert "revision 9999, newer than this version knows" in said
    assert sorted(p.name for p in tmp_path.iterdir()) == ["newer"]


def test_a_restore_with_a_changed_file_restores_nothing(damaged: Damaged, tmp_path: Path) -> None:
    changed = copied(damaged, tmp_path / "changed")
    stored = next((changed / "blobs" / damaged.whole).glob("0.*"))
    stored.write_bytes(stored.read_bytes().replace(b"whole", b"WHOLE"))
    code, said = restore(damaged, changed, tmp_path / "data")
    assert code == 1
    assert f"{damaged.whole}/0.{stored.name[2:]}: " in said
    assert "nothing was restored" in said
    assert sorted(p.name for p in tmp_path.iterdir()) == ["changed"]


def test_a_restore_with_a_missing_file_restores_nothing(damaged: Damaged, tmp_path: Path) -> None:
    lacking = copied(damaged, tmp_path / "lacking")
    next((lacking / "blobs" / damaged.whole).glob("1.*")).unlink()
    code, said = restore(damaged, lacking, tmp_path / "data")
    assert code == 1
    assert ": missing" in said
    assert sorted(p.name for p in tmp_path.iterdir()) == ["lacking"]


def test_a_backup_of_an_older_schema_is_migrated_and_served(
    damaged: Damaged, tmp_path: Path
) -> None:
    older = copied(damaged, tmp_path / "older")
    previous = f"{int(head_revision()) - 1:04d}"
    engine = create_engine(f"sqlite:///{older / 'tracesets.db'}")
    with engine.connect() as conn:
        config = Config()
        config.set_main_option("script_location", str(MIGRATIONS))
        config.attributes["connection"] = conn
        command.downgrade(config, previous)
        conn.commit()
    engine.dispose()
    manifest = json.loads((older / "manifest.json").read_text())
    (older / "manifest.json").write_text(json.dumps({**manifest, "revision": previous}))
    code, said = restore(damaged, older, tmp_path / "data")
    assert code == 0, said
    with running(embedded(tmp_path / "data")) as restored, client(restored, damaged.token) as api:
        assert downloaded(api, damaged.whole, "rank0.json") == files_of("whole")["rank0.json"]
        assert restored.query("SELECT version_num FROM alembic_version") == [(head_revision(),)]
