"""A job of 100,000 ranks is one traceset: declared over several requests, uploaded,
completed, inspected, listed and paged, with every answer bounded.

The suite runs it with 4,500 ranks (past one request's batch, five pages of files):
every step's cost is per file, and 100,000 take half an hour on SQLite and more on
PostgreSQL + S3 on a shared 2-core machine. ``TRACESETS_TEST_RANKS=100000`` runs the
job at full size (bench/README, "A job of 100,000 ranks", has its figures).

One trace per rank, each a Kineto header of a few dozen bytes (the per-file work is what
is measured, not the bytes). The declaration goes as upload-url then add-files, in the
Python client's batches (4,000 files a request). Each step's time is printed (never
asserted: performance is bench/'s); each answer's size is asserted. The service is one of its own (its own database on PostgreSQL), so its
inspection queue reads no other test's tracesets and no other queue reads this one.
"""

from __future__ import annotations

import hashlib
import http.client
import os
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

import httpx
import orjson
import pytest

from tests.server import ServerProcess, own_database
from tracesets.api.render import INSPECTION_EMBED_BYTES, INSPECTION_LIST_BYTES
from tracesets.client.protocol import BATCH_FILES, COMPLETE_TIMEOUT
from tracesets.vocabulary import FILES_PAGE_MAX

RANKS = int(os.environ.get("TRACESETS_TEST_RANKS", "4500"))
#: The answers' bound (README, "What the answers hold").
BOUND = 8 * 1024 * 1024
FILES_PAGE_BYTES = 2 * 1024 * 1024
PUTS_AT_ONCE = 16
T = TypeVar("T")


def body_of(rank: int) -> bytes:
    """A Kineto trace of no events that says which rank of the job it is (62 bytes or so)."""
    return b'{"distributedInfo":{"rank":%d,"world_size":%d},"traceEvents":[]}' % (rank, RANKS)


def declared(rank: int) -> dict[str, Any]:
    data = body_of(rank)
    return {
        "name": f"rank{rank}.trace.json",
        "size": len(data),
        "role": "primary",
        "sha256": hashlib.sha256(data).hexdigest(),
    }


class Steps:
    """Each step's time, printed as it ends and again at the end of the test."""

    def __init__(self) -> None:
        self.times: list[tuple[str, float]] = []

    def run(self, what: str, step: Callable[[], T]) -> T:
        started = time.perf_counter()
        result = step()
        self.times.append((what, time.perf_counter() - started))
        print(f"{RANKS:,} ranks: {what}: {self.times[-1][1]:.1f} s", flush=True)
        return result


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    env = {"TRACESETS_RATE_LIMIT": "1000000", "TRACESETS_RATE_BURST": "1000000"}
    database = os.environ.get("TRACESETS_TEST_DATABASE_URL", "")
    if database.startswith("postgresql"):
        env["DATABASE_URL"] = own_database(database)
    process = ServerProcess(tmp_path_factory.mktemp("ranks"), extra_env=env)
    process.start()
    yield process
    process.stop()


def _bounded(answer: httpx.Response, status: int = 200, bound: int = BOUND) -> Any:
    assert answer.status_code == status, answer.text[:500]
    assert len(answer.content) < bound, f"{answer.request.url.path}: {len(answer.content):,} B"
    return answer.json()


def _declare(api: httpx.Client) -> tuple[str, list[dict[str, Any]]]:
    """upload-url with the first batch of files (the Python client's: 4,000) and the rank
    count, add-files for each other batch."""
    first = _bounded(
        api.post(
            "/api/v1/tracesets/upload-url",
            json={
                "name": f"job of {RANKS:,} ranks",
                "files": [declared(r) for r in range(BATCH_FILES)],
                "workloadMetadata": {"shape": {"rankCount": RANKS}},
            },
        ),
        201,
    )
    traceset_id: str = first["tracesetId"]
    uploads = _entries(api, traceset_id, first, range(BATCH_FILES))
    for start in range(BATCH_FILES, RANKS, BATCH_FILES):
        ranks = range(start, min(RANKS, start + BATCH_FILES))
        added = _bounded(
            api.post(
                f"/api/v1/tracesets/{traceset_id}/files",
                json={"files": [declared(r) for r in ranks]},
            ),
            201,
        )
        uploads += _entries(api, traceset_id, added, ranks)
    return traceset_id, uploads


def _entries(
    api: httpx.Client, traceset_id: str, answer: dict[str, Any], ranks: range
) -> list[dict[str, Any]]:
    """An answer's upload entries, and those it left out to stay bounded (S3's presigned
    URLs with their checksum headers are about 900 bytes each), from the upload status."""
    entries: list[dict[str, Any]] = answer["uploads"]
    cursor = answer.get("uploadsNextCursor")
    wanted = {declared(r)["name"] for r in ranks} - {e["name"] for e in entries}
    while cursor is not None and wanted:
        page = _bounded(
            api.get(f"/api/v1/tracesets/{traceset_id}/uploads", params={"cursor": cursor})
        )
        entries += [e for e in page["uploads"] if e["name"] in wanted]
        wanted -= {e["name"] for e in page["uploads"]}
        cursor = page["nextCursor"]
    assert not wanted
    return entries


def _put_all(uploads: list[dict[str, Any]]) -> None:
    """Every file's bytes to its URL, over ``PUTS_AT_ONCE`` keep-alive connections (the
    standard library's client: a tenth of httpx's cost a request, so the service's work
    is what the step measures)."""
    ranks = {declared(r)["name"]: r for r in range(RANKS)}
    chunks = [uploads[i::PUTS_AT_ONCE] for i in range(PUTS_AT_ONCE)]

    def put(chunk: list[dict[str, Any]]) -> None:
        where = urlsplit(chunk[0]["url"])
        connection = http.client.HTTPConnection(where.netloc, timeout=120)
        try:
            for entry in chunk:
                url = urlsplit(entry["url"])
                assert url.netloc == where.netloc
                data = body_of(ranks[entry["name"]])
                connection.request(
                    "PUT", f"{url.path}?{url.query}", body=data, headers=entry["headers"]
                )
                answer = connection.getresponse()
                text = answer.read()
                assert answer.status in (200, 201, 204), text[:300]
        finally:
            connection.close()

    with ThreadPoolExecutor(PUTS_AT_ONCE) as pool:
        list(pool.map(put, chunks))


def _inspected(api: httpx.Client, traceset_id: str) -> dict[str, Any]:
    """The traceset once its inspection has finished (polled: the queue runs in the
    service, and its end is seen only through the API)."""
    while True:
        got: dict[str, Any] = _bounded(api.get(f"/api/v1/tracesets/{traceset_id}"))
        if got["inspection"] is not None and got["inspection"]["status"] != "pending":
            return got
        time.sleep(0.5)


def _every_file(api: httpx.Client, traceset_id: str) -> list[str]:
    names: list[str] = []
    cursor: str | None = None
    while True:
        params: dict[str, str | int] = {"limit": FILES_PAGE_MAX}
        if cursor is not None:
            params["cursor"] = cursor
        page = _bounded(
            api.get(f"/api/v1/tracesets/{traceset_id}/files", params=params),
            bound=FILES_PAGE_BYTES + 1024,
        )
        assert 0 < len(page["items"]) <= FILES_PAGE_MAX
        names += [f["name"] for f in page["items"]]
        cursor = page["nextCursor"]
        if cursor is None:
            return names


def test_a_job_of_many_ranks_is_one_traceset(service: ServerProcess, tmp_path: Path) -> None:
    token = service.new_token("ws-ranks")
    steps = Steps()
    with httpx.Client(
        base_url=service.url, headers={"Authorization": f"Bearer {token}"}, timeout=600
    ) as api:
        traceset_id, uploads = steps.run(
            "declare (upload-url, then add-files)", lambda: _declare(api)
        )
        assert len(uploads) == RANKS and len({u["name"] for u in uploads}) == RANKS

        steps.run(f"PUT every file ({PUTS_AT_ONCE} at a time)", lambda: _put_all(uploads))

        # As long as the Python client waits for it: every file is checked in the store.
        done = steps.run(
            "complete",
            lambda: _bounded(
                api.post(f"/api/v1/tracesets/{traceset_id}/complete", timeout=COMPLETE_TIMEOUT)
            ),
        )
        assert done["status"] == "ready"
        assert (done["fileCount"], done["filesReceived"]) == (RANKS, RANKS)
        assert len(done["files"]) == FILES_PAGE_MAX and done["filesNextCursor"] is not None

        got = steps.run("inspect (until done)", lambda: _inspected(api, traceset_id))
        inspection = got["inspection"]
        assert inspection["status"] == "done" and inspection["warnings"] == []
        assert inspection["worldSize"] == RANKS and inspection["missingRankCount"] == 0
        assert inspection["duplicateRanks"] == [] and inspection["unreadable"] == []
        # Past the inline bound (100,000 files' findings are), cut and said so.
        size = len(orjson.dumps(inspection))
        if inspection["truncated"]:
            assert size <= INSPECTION_EMBED_BYTES + 64 * 1024
            # The files' findings kept up to their list's budget, not fewer.
            kept = len(orjson.dumps(inspection["files"]))
            assert INSPECTION_LIST_BYTES - 4096 < kept <= INSPECTION_LIST_BYTES
            assert 0 < len(inspection["files"]) < RANKS
        else:
            assert size <= INSPECTION_EMBED_BYTES and len(inspection["files"]) == RANKS

        listed = steps.run("list", lambda: _bounded(api.get("/api/v1/tracesets")))
        assert [t["id"] for t in listed["items"]] == [traceset_id]
        assert len(api.get("/api/v1/tracesets").content) < 100_000  # counts, never lists
        assert listed["items"][0]["fileCount"] == RANKS

        names = steps.run(
            f"page every file ({FILES_PAGE_MAX:,} a page)", lambda: _every_file(api, traceset_id)
        )
        assert names == [declared(r)["name"] for r in range(RANKS)]

        status = steps.run(
            "upload status, first page",
            lambda: _bounded(api.get(f"/api/v1/tracesets/{traceset_id}/uploads")),
        )
        assert status["status"] == "ready" and status["uploads"] == []
    print(" · ".join(f"{what} {seconds:.1f} s" for what, seconds in steps.times))
