"""``tracesets backup`` and ``tracesets restore`` against real service processes: a backup
taken while uploads run, restored into a new data folder and served again; and every way
a restore refuses, leaving nothing behind.

The services run on SQLite and a local folder whatever the run's backends (the embedded
default is what these commands handle), with the secret generated into the data folder.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import httpx

from tests.flows import request_urls, send, upload
from tests.server import FRESH_CONNECTIONS, ServerProcess

EMBEDDED = {"DATABASE_URL": "", "TRACESETS_SECRET": ""}
UPLOADERS = 3


def embedded(data_dir: Path) -> ServerProcess:
    return ServerProcess(data_dir, local_files=True, extra_env=EMBEDDED)


@contextmanager
def running(service: ServerProcess) -> Iterator[ServerProcess]:
    service.start()
    try:
        yield service
    finally:
        service.stop()


def client(service: ServerProcess, token: str) -> httpx.Client:
    return httpx.Client(
        base_url=service.url,
        headers={"Authorization": f"Bearer {token}"},
        timeout=60,
        limits=FRESH_CONNECTIONS,
    )


def files_of(label: str) -> dict[str, bytes]:
    return {f"rank{r}.json": f'{{"traceEvents": [], "of": "{label}/{r}"}}'.encode() for r in (0, 1)}


def downloaded(api: httpx.Client, traceset_id: str, name: str) -> bytes:
    answer = api.get(f"/api/v1/tracesets/{traceset_id}/files/{name}", follow_redirects=True)
    assert answer.status_code == 200, answer.text
    return answer.content


def ready_in(backup: Path) -> dict[str, list[tuple[str, int, str, bool]]]:
    """The backup's ready tracesets, each with its files: name, index, sha256, received."""
    with closing(sqlite3.connect(backup / "tracesets.db")) as db:
        rows = db.execute(
            "SELECT t.id, f.name, f.idx, f.sha256, f.received FROM tracesets t "
            "JOIN files f ON f.traceset_seq = t.seq WHERE t.status = 'ready'"
        ).fetchall()
    found: dict[str, list[tuple[str, int, str, bool]]] = {}
    for traceset_id, name, idx, sha256, received in rows:
        found.setdefault(traceset_id, []).append((name, idx, sha256, bool(received)))
    return found


@dataclass
class Uploads:
    """Tracesets uploaded by threads until told to stop, each recorded once ready."""

    api_token: str
    service: ServerProcess

    def __post_init__(self) -> None:
        self.ready: dict[str, dict[str, bytes]] = {}
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.started = [threading.Event() for _ in range(UPLOADERS)]
        self.failures: list[BaseException] = []
        self.threads = [threading.Thread(target=self._run, args=(n,)) for n in range(UPLOADERS)]

    def _run(self, n: int) -> None:
        try:
            with client(self.service, self.api_token) as api:
                count = 0
                while not self.stop.is_set():
                    files = files_of(f"uploader {n} #{count}")
                    done = upload(api, files, name=f"uploader {n} #{count}")
                    with self.lock:
                        self.ready[done["id"]] = files
                    self.started[n].set()
                    count += 1
        except BaseException as error:
            self.failures.append(error)
            self.started[n].set()

    def __enter__(self) -> Uploads:
        for thread in self.threads:
            thread.start()
        for started in self.started:
            assert started.wait(120), "an uploader never finished an upload"
        return self

    def __exit__(self, *_: object) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join()
        assert not self.failures, self.failures


def test_a_backup_taken_while_uploads_run_serves_every_ready_traceset_once_restored(
    tmp_path: Path,
) -> None:
    backup = tmp_path / "backup"
    live = embedded(tmp_path / "live")
    with running(live):
        token = live.new_token("ws-" + secrets.token_hex(6))
        with client(live, token) as api:
            earlier = {
                upload(api, files_of(f"early {i}"))["id"]: files_of(f"early {i}") for i in range(3)
            }
            halfway = files_of("halfway")
            pending = request_urls(api, halfway, name="halfway")
            send(pending["uploads"][0], halfway[pending["uploads"][0]["name"]])
            first_id = next(iter(earlier))
            signed = api.get(f"/api/v1/tracesets/{first_id}/files/rank0.json")
            assert signed.status_code == 307
        with Uploads(token, live) as uploads:
            taken = live.cli("backup", str(backup), "--data-dir", str(live.data_dir))
        assert taken.returncode == 0, taken.stderr
        assert (live.data_dir / "secret").is_file()

    manifest = json.loads((backup / "manifest.json").read_text())
    in_backup = ready_in(backup)
    assert set(earlier) <= set(in_backup)
    assert manifest["tracesets"]["ready"] == len(in_backup)
    # The halfway traceset, and those the uploaders had not completed at the copy.
    assert 1 <= manifest["tracesets"]["pending"] <= 1 + UPLOADERS
    assert manifest["secret"] is True
    for traceset_id, files in in_backup.items():
        for _, idx, sha256, received in files:
            assert received
            stored = backup / "blobs" / traceset_id / f"{idx}.{sha256}"
            assert hashlib.sha256(stored.read_bytes()).hexdigest() == sha256
    uploaded = {**earlier, **uploads.ready}

    restored_dir = tmp_path / "restored"
    put_back = live.cli("restore", str(backup), "--data-dir", str(restored_dir))
    assert put_back.returncode == 0, put_back.stderr
    with running(embedded(restored_dir)) as restored, client(restored, token) as api:
        for traceset_id, files in in_backup.items():
            shown = api.get(f"/api/v1/tracesets/{traceset_id}").json()
            assert shown["status"] == "ready"
            for name, _, sha256, _ in files:
                data = downloaded(api, traceset_id, name)
                assert hashlib.sha256(data).hexdigest() == sha256
                assert data == uploaded[traceset_id][name]
        # A URL the first service signed is still good: the secret came along.
        location = urlsplit(signed.headers["location"])
        again = httpx.get(f"{restored.url}{location.path}?{location.query}", timeout=60)
        assert again.status_code == 200
        assert again.content == earlier[first_id]["rank0.json"]
        # The pending traceset kept its received file; the other is still to send.
        left = api.get(f"/api/v1/tracesets/{pending['tracesetId']}").json()
        assert left["status"] == "pending"
        missing = api.post(f"/api/v1/tracesets/{pending['tracesetId']}/complete")
        assert missing.status_code == 409
        assert [e["value"] for e in missing.json()["errors"]] == [pending["uploads"][1]["name"]]
