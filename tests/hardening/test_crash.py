"""A SIGKILL in the middle of 20 uploads and 10 promotions loses nothing acknowledged.

Each trial starts a service, sets 20 clients uploading (upload-url with an
Idempotency-Key, PUT, complete) and 10 promoting at once, kills the service with
SIGKILL once a trial-specific number of answers has come back, and then proves:

- at rest, before the restart: the database passes its integrity check (SQLite's
  ``PRAGMA integrity_check``; on PostgreSQL, consistency queries), and the store holds
  only whole files (every visible file has its declared size and digest);
- after a restart on the same data: every upload the service acknowledged is intact
  (downloaded, digest checked), no traceset is half-promoted (each promotion target is
  either untouched or promoted with its new metadata, and acknowledged ones are
  promoted), and every interrupted upload completes when its client retries (same
  Idempotency-Key: the same traceset, fresh URLs for what is missing, never a second
  traceset);
- acknowledged bytes never change: some clients send other bytes to a file's URL while
  its ``complete`` runs (the late upload races it); whatever ``complete`` answered, the
  stored file, its sha256 and its download are exactly those bytes, before and after the
  restart, and a late upload is refused (409 from the service, 412 from S3) or lost with
  the service, never kept.

It runs on whatever backends the run uses: SQLite + local files, or PostgreSQL + S3.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
import signal
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.flows import send, spec, upload
from tests.hardening import tally
from tests.server import FRESH_CONNECTIONS, ServerProcess, uses_s3

UPLOADS = 20
PROMOTIONS = 10
ORIGINAL = {"shape": {"rankCount": 8}, "parallelism": {"dp": 4, "tp": 2}}
PROMOTED = {**ORIGINAL, "workload_family": "llama", "precision": "bf16"}
#: Kill once this share of the service's answers has come back: early, midway, late.
KILL_AFTER = [0.05, 0.35, 0.7]
#: Over the scaled run's multipart threshold (5 MiB), so some files go to S3 in parts.
LARGE = 6 * 1024 * 1024


@dataclass
class Upload:
    """One client's traceset, and what the service acknowledged of it."""

    index: int
    files: dict[str, bytes]
    key: str = field(default_factory=lambda: secrets.token_hex(16))
    traceset_id: str | None = None
    arrived: set[str] = field(default_factory=set)  # PUTs answered 200
    completed: bool = False
    #: Other bytes sent to the file's URL while complete runs (declared without sha256).
    racing: dict[str, bytes] = field(default_factory=dict)
    #: name → sha256, as complete's 200 answered it.
    acknowledged: dict[str, str] = field(default_factory=dict)

    @property
    def body(self) -> bytes:
        return json.dumps(
            {
                "name": f"crash upload {self.index}",
                "files": [
                    spec(name, data, with_sha=name not in self.racing)
                    for name, data in self.files.items()
                ],
                "workloadMetadata": ORIGINAL,
            }
        ).encode()

    def request_urls(self, api: httpx.Client) -> httpx.Response:
        return api.post(
            "/api/v1/tracesets/upload-url",
            content=self.body,
            headers={"Idempotency-Key": self.key, "Content-Type": "application/json"},
        )


def make_uploads() -> list[Upload]:
    uploads = []
    for i in range(UPLOADS):
        size = LARGE if i % 7 == 3 else 256 * 1024 * (1 + i % 4)
        files = {"rank0.json": os.urandom(size), "logs/run.txt": os.urandom(1000 + i)}
        # Every other upload races a late PUT of other bytes against its complete.
        racing = {"logs/run.txt": os.urandom(1000 + i)} if i % 2 else {}
        uploads.append(Upload(i, files, racing=racing))
    return uploads


@dataclass
class Storm:
    """The clients' threads; counts answers, records anything but success or a lost link.

    The answer that reaches ``kill_after`` kills the service on the spot, in the thread
    that counted it: the kill comes after exactly that many answers, however the
    threads are scheduled, not whenever a watcher next looks.
    """

    kill: Callable[[], None]
    kill_after: int
    acknowledged: int = 0
    unexpected: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def answer(self, response: httpx.Response, *expected: int, by_service: bool = True) -> bool:
        """Whether the answer is one expected; counts the service's own answers."""
        with self.lock:
            if response.status_code not in expected:
                self.unexpected.append(f"{response.request.method} {response.url}: {response.text}")
                return False
            self.acknowledged += by_service
            if by_service and self.acknowledged == self.kill_after:
                self.kill()
            return True

    def run(self, work: Callable[[], None]) -> None:
        with contextlib.suppress(httpx.TransportError):  # the service was killed under it
            work()


def client(server: ServerProcess, token: str) -> httpx.Client:
    return httpx.Client(
        base_url=server.url,
        headers={"Authorization": f"Bearer {token}"},
        timeout=60,
        limits=FRESH_CONNECTIONS,
    )


def put(url: str, data: bytes, headers: dict[str, str]) -> httpx.Response:
    return httpx.put(url, content=data, headers=headers, timeout=60)


def upload_once(storm: Storm, server: ServerProcess, token: str, up: Upload) -> None:
    with client(server, token) as api:
        created = up.request_urls(api)
        if not storm.answer(created, 201):
            return
        up.traceset_id = created.json()["tracesetId"]
        for target in created.json()["uploads"]:
            data = up.files[target["name"]]
            if target.get("parts"):  # S3 multipart: the service is not in this path
                for part in target["parts"]:
                    start = (part["partNumber"] - 1) * target["partSize"]
                    chunk = data[start : start + part["size"]]
                    sent = put(part["url"], chunk, part["headers"])
                    if not storm.answer(sent, 200, by_service=False):
                        return
            else:
                url = target["url"]
                sent = put(url, data, target["headers"])
                if not storm.answer(sent, 200, by_service=url.startswith(server.url)):
                    return
            up.arrived.add(target["name"])
        with ThreadPoolExecutor(1) as late:
            racing = [
                late.submit(storm.run, partial(put_late, storm, target, up.racing[target["name"]]))
                for target in created.json()["uploads"]
                if target["name"] in up.racing
            ]
            done = api.post(f"/api/v1/tracesets/{up.traceset_id}/complete")
            for job in racing:
                job.result()
        up.completed = storm.answer(done, 200)
        if up.completed:
            up.acknowledged = {f["name"]: f["sha256"] for f in done.json()["files"]}


def put_late(storm: Storm, target: dict[str, Any], data: bytes) -> None:
    """Other bytes to a file's URL, racing its complete: kept only if they came first."""
    sent = put(target["url"], data, target["headers"])
    storm.answer(sent, 200, 409, 412, by_service=False)


def promote_once(
    storm: Storm, server: ServerProcess, token: str, traceset_id: str, acked: set[str]
) -> None:
    with client(server, token) as api:
        answer = api.post(
            f"/api/v1/tracesets/{traceset_id}/promote", json={"workloadMetadata": PROMOTED}
        )
        if storm.answer(answer, 200):
            acked.add(traceset_id)


# -- what must hold at rest ---------------------------------------------------------------


def check_database(server: ServerProcess, workspace: str) -> None:
    """SQLite's own integrity check, and consistency of what the workspace holds."""
    if "DATABASE_URL" not in server.env:
        assert server.query("PRAGMA integrity_check") == [("ok",)]
        assert server.query("PRAGMA foreign_key_check") == []
    mine = f"t.workspace = '{workspace}'"
    broken = {
        "a complete traceset with a file not received": f"""
            SELECT t.id FROM tracesets t JOIN files f ON f.traceset_seq = t.seq
            WHERE {mine} AND t.status <> 'pending' AND (NOT f.received OR f.sha256 IS NULL)""",
        "promotedAt set exactly when promoted": f"""
            SELECT t.id FROM tracesets t
            WHERE {mine} AND (t.status = 'promoted') <> (t.promoted_at IS NOT NULL)""",
        "an unknown status": f"""
            SELECT t.id FROM tracesets t
            WHERE {mine} AND t.status NOT IN ('pending', 'ready', 'promoted')""",
        "a traceset without files": f"""
            SELECT t.id FROM tracesets t WHERE {mine}
            AND NOT EXISTS (SELECT 1 FROM files f WHERE f.traceset_seq = t.seq)""",
        "a received file without its digest": f"""
            SELECT t.id FROM tracesets t JOIN files f ON f.traceset_seq = t.seq
            WHERE {mine} AND f.received AND f.sha256 IS NULL""",
        "an Idempotency-Key of no traceset": f"""
            SELECT k.key FROM idempotency_keys k WHERE k.workspace = '{workspace}'
            AND NOT EXISTS (SELECT 1 FROM tracesets t WHERE t.id = k.traceset_id)""",
    }
    for what, sql in broken.items():
        assert server.query(sql) == [], what


@dataclass(frozen=True)
class FileRow:
    size: int
    sha256_declared: str | None
    sha256: str | None  # recorded: at complete, or (local files) when the bytes arrived
    complete: bool


def stored_files(server: ServerProcess, workspace: str) -> dict[tuple[str, int], FileRow]:
    """(traceset id, file index) → what the database says of the file, for the workspace."""
    rows = server.query(
        "SELECT t.id, f.idx, f.size, f.sha256_declared, f.sha256, t.status FROM tracesets t "
        f"JOIN files f ON f.traceset_seq = t.seq WHERE t.workspace = '{workspace}'"
    )
    return {
        (str(r[0]), int(str(r[1]))): FileRow(
            int(str(r[2])),
            None if r[3] is None else str(r[3]),
            None if r[4] is None else str(r[4]),
            r[5] != "pending",
        )
        for r in rows
    }


def visible_files(server: ServerProcess, traceset_ids: set[str]) -> Iterator[tuple[str, bytes]]:
    """Every file a reader of the store can see for these tracesets: (id/index, bytes)."""
    if uses_s3():
        import boto3

        bucket, _, prefix = server.env["TRACESETS_STORAGE_URL"].removeprefix("s3://").partition("/")
        s3 = boto3.client("s3")
        for traceset_id in traceset_ids:
            listed = s3.list_objects_v2(Bucket=bucket, Prefix=f"{prefix}/{traceset_id}/")
            for item in listed.get("Contents", []):
                key = item["Key"].removeprefix(f"{prefix}/")
                yield key, s3.get_object(Bucket=bucket, Key=item["Key"])["Body"].read()
        return
    blobs = server.data_dir / "blobs"
    for path in blobs.glob("*/*"):
        yield f"{path.parent.name}/{path.name}", path.read_bytes()


def check_store(server: ServerProcess, workspace: str) -> None:
    """Only whole files are visible: each has its declared size and digest, and every file
    of a complete traceset holds the bytes its row records.

    Local files are named ``INDEX.SHA256`` (their digest): the name must be the bytes'.
    """
    declared = stored_files(server, workspace)
    named: dict[tuple[str, int], set[str]] = {}
    for key, data in visible_files(server, {t for t, _ in declared}):
        traceset_id, _, name = key.partition("/")
        idx, _, name_sha256 = name.partition(".")
        row = declared.get((traceset_id, int(idx)))
        assert row is not None, f"{key}: a file of no traceset"
        digest = hashlib.sha256(data).hexdigest()
        assert len(data) == row.size, key
        assert row.sha256_declared in (None, digest), key
        assert name_sha256 in ("", digest), f"{key}: bytes that are not the name's"
        named.setdefault((traceset_id, int(idx)), set()).add(digest)
    for file, row in declared.items():
        if row.complete:
            # Bytes replaced before complete may outlive a kill right after it, under
            # names no row gives: never served, and removed with the traceset.
            assert row.sha256 in named.get(file, set()), f"{file}: the recorded bytes are gone"


# -- the trial ------------------------------------------------------------------------------


@pytest.mark.parametrize("kill_at", KILL_AFTER)
def test_sigkill_mid_uploads_and_promotions_loses_nothing(tmp_path: Path, kill_at: float) -> None:
    server = ServerProcess(tmp_path / "svc")
    server.start()
    try:
        workspace = "crash-" + secrets.token_hex(6)
        token = server.new_token(workspace)
        with client(server, token) as api:
            targets = [
                upload(api, {"rank0.json": os.urandom(2048)}, ORIGINAL, name=f"promote {i}")["id"]
                for i in range(PROMOTIONS)
            ]
        uploads = make_uploads()
        # upload-url, complete and each promotion; with local files, each PUT too.
        answers = UPLOADS * (2 if uses_s3() else 4) + PROMOTIONS
        assert server.proc is not None
        storm = Storm(
            kill=partial(server.proc.send_signal, signal.SIGKILL),
            kill_after=max(1, round(kill_at * answers)),
        )
        promoted = set[str]()
        with ThreadPoolExecutor(max_workers=UPLOADS + PROMOTIONS) as clients:
            running = [
                *(
                    clients.submit(storm.run, partial(upload_once, storm, server, token, u))
                    for u in uploads
                ),
                *(
                    clients.submit(
                        storm.run, partial(promote_once, storm, server, token, t, promoted)
                    )
                    for t in targets
                ),
            ]
            for done in running:  # once the service is killed, every client fails fast
                done.result()
        server.stop(signal.SIGKILL)  # reaped (and killed, had the count never been reached)
        assert storm.unexpected == []
        assert any(not up.completed for up in uploads) or len(promoted) < PROMOTIONS, (
            "the service was killed only after all the work was done: no trial"
        )
        check_database(server, workspace)
        check_store(server, workspace)

        server.start()
        with client(server, token) as api:
            # Acknowledged before the kill: intact, and promotions whole or not at all.
            for up in uploads:
                if up.completed:
                    assert_intact(api, up)
                    assert up.racing or up.acknowledged == digests(up.files)
            for traceset_id in targets:
                got = api.get(f"/api/v1/tracesets/{traceset_id}").json()
                state = (got["status"], got["promotedAt"] is not None, got["workloadMetadata"])
                assert state in [("ready", False, ORIGINAL), ("promoted", True, PROMOTED)]
                assert traceset_id not in promoted or state[0] == "promoted"
            # Interrupted: the clients retry, and everything completes.
            for up in uploads:
                resume(api, up)
                assert_intact(api, up)
            for traceset_id in targets:
                again = api.post(
                    f"/api/v1/tracesets/{traceset_id}/promote", json={"workloadMetadata": PROMOTED}
                )
                assert again.status_code == 200 and again.json()["workloadMetadata"] == PROMOTED
            listed = api.get("/api/v1/tracesets", params={"limit": 500}).json()["items"]
            assert sorted(t["name"] for t in listed) == sorted(
                [f"crash upload {i}" for i in range(UPLOADS)]
                + [f"promote {i}" for i in range(PROMOTIONS)]
            )
        check_database(server, workspace)
        check_store(server, workspace)
        resumed = sum(not up.completed for up in uploads)
        tally.CRASH_TRIALS.append(
            f"crash trial ({'PostgreSQL + S3' if uses_s3() else 'SQLite + local files'}): "
            f"SIGKILL after {storm.acknowledged} of {answers} answers; {UPLOADS - resumed} uploads and "
            f"{len(promoted)} promotions acknowledged and intact, {resumed} uploads and "
            f"{PROMOTIONS - len(promoted)} promotions completed on retry; survived"
        )
    finally:
        server.stop()


def resume(api: httpx.Client, up: Upload) -> None:
    """What a client does after losing the service: the same request, then what is missing."""
    created = up.request_urls(api)
    assert created.status_code == 201, created.text
    traceset_id = created.json()["tracesetId"]
    assert up.traceset_id in (None, traceset_id)  # the same traceset, never a second one
    up.traceset_id = traceset_id
    for target in created.json()["uploads"]:
        send(target, up.files[target["name"]])
    done = api.post(f"/api/v1/tracesets/{traceset_id}/complete")
    assert done.status_code == 200, done.text


def digests(files: dict[str, bytes]) -> dict[str, str]:
    return {name: hashlib.sha256(data).hexdigest() for name, data in files.items()}


def assert_intact(api: httpx.Client, up: Upload) -> None:
    """Complete, with the bytes its complete acknowledged (if it answered), which are the
    client's, or for a raced file the late upload's if that came first."""
    got: dict[str, Any] = api.get(f"/api/v1/tracesets/{up.traceset_id}").json()
    assert got["status"] == "ready" and got["workloadMetadata"] == ORIGINAL
    sent, late = digests(up.files), digests(up.racing)
    for name in up.files:
        file = next(f for f in got["files"] if f["name"] == name)
        assert file["received"] and file["sha256"] in (sent[name], late.get(name))
        if up.acknowledged:
            assert file["sha256"] == up.acknowledged[name], f"{name}: acknowledged bytes changed"
        download = api.get(f"/api/v1/tracesets/{up.traceset_id}/files/{name}")
        body = httpx.get(download.headers["location"], timeout=60).content
        assert hashlib.sha256(body).hexdigest() == file["sha256"], name
