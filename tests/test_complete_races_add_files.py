"""``complete`` checks the files it read, outside any transaction: a file added meanwhile
must not end up in a ready traceset without its bytes. The same of ``complete_on_loop``,
the event loop's, which checks a few files on the loop itself."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.arrived import ArrivedStore, arrived_service
from tracesets.db import queries
from tracesets.problems import Conflict
from tracesets.records import Traceset
from tracesets.service.catalog import TracesetService
from tracesets.service.completion import ON_LOOP_FILES
from tracesets.service.core import ANSWER_FILES

BASE = "http://127.0.0.1:1"


def body(*names: str) -> bytes:
    files = [{"name": n, "size": 1, "role": "primary", "sha256": "a" * 64} for n in names]
    return orjson.dumps({"files": files})


Complete = Callable[[TracesetService, str], Traceset]


def on_loop(service: TracesetService, traceset_id: str) -> Traceset:
    return asyncio.run(service.complete_on_loop("ws", traceset_id))


@pytest.fixture(params=["in a thread", "on the loop"])
def complete(request: pytest.FixtureRequest) -> Complete:
    if request.param == "on the loop":
        return on_loop
    return lambda service, traceset_id: service.complete("ws", traceset_id)


@pytest.fixture
def service(tmp_path: Path) -> TracesetService:
    return arrived_service(tmp_path)


def a_job(service: TracesetService, files: int) -> Traceset:
    """A pending traceset of ``files`` rank files."""
    names = [f"rank{i}.json" for i in range(files)]
    metadata = {"shape": {"rankCount": files}}
    create = {**orjson.loads(body(*names)), "name": "job", "workloadMetadata": metadata}
    traceset, _ = service.create_upload("ws", orjson.dumps(create), BASE)
    return traceset


def pages_read(monkeypatch: pytest.MonkeyPatch) -> list[int | None]:
    """The ``files_limit`` of every traceset read from now on (None: every file)."""
    limits: list[int | None] = []
    get_traceset = queries.get_traceset

    def read(*args: object, **kwargs: Any) -> Traceset | None:
        limits.append(kwargs.get("files_limit"))
        return get_traceset(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(queries, "get_traceset", read)
    return limits


def test_a_file_added_while_complete_checks_the_others_keeps_the_traceset_pending(
    service: TracesetService, complete: Complete
) -> None:
    create = orjson.dumps(
        {
            "name": "job",
            "files": orjson.loads(body("rank0.json"))["files"],
            "workloadMetadata": {"shape": {"rankCount": 2}},
        }
    )
    traceset, _ = service.create_upload("ws", create, BASE)
    store = _arrived(service)
    store.during_check.append(
        lambda: service.add_files("ws", traceset.id, body("rank1.json"), BASE)
    )
    with pytest.raises(Conflict) as refused:
        complete(service, traceset.id)
    assert [p.value for p in refused.value.problems] == ["rank1.json"]
    assert service.get("ws", traceset.id).status == "pending"
    assert complete(service, traceset.id).status == "ready"  # both checked this time
    assert [f.name for f in service.get("ws", traceset.id).files] == ["rank0.json", "rank1.json"]


def _land(service: TracesetService, traceset_id: str, digest: str) -> None:
    """What a PUT that lands records: the file's digest."""
    with service.db.write() as conn:
        seq = conn.exec_driver_sql("SELECT seq FROM tracesets WHERE id = ?", (traceset_id,))
        conn.exec_driver_sql(
            "UPDATE files SET sha256 = ? WHERE traceset_seq = ?", (digest, seq.scalar_one())
        )


def _arrived(service: TracesetService) -> ArrivedStore:
    assert isinstance(service.store, ArrivedStore)
    return service.store


def _undeclared(service: TracesetService) -> str:
    create = {
        "name": "job",
        "files": [{"name": "rank0.json", "size": 1, "role": "primary"}],
        "workloadMetadata": {"shape": {"rankCount": 1}},
    }
    traceset, _ = service.create_upload("ws", orjson.dumps(create), BASE)
    return traceset.id


def test_a_put_landing_while_complete_checks_is_checked_again(
    service: TracesetService, complete: Complete
) -> None:
    traceset_id = _undeclared(service)
    store = _arrived(service)
    store.during_check.append(lambda: _land(service, traceset_id, "b" * 64))
    done = complete(service, traceset_id)
    assert done.status == "ready"
    assert [f.sha256 for f in service.get("ws", traceset_id).files] == ["b" * 64]


def test_puts_that_keep_landing_end_complete_with_a_conflict(
    service: TracesetService, complete: Complete
) -> None:
    traceset_id = _undeclared(service)
    store = _arrived(service)
    landed = iter(f"{n:064x}" for n in range(1, 100))

    def land_again() -> None:
        _land(service, traceset_id, next(landed))
        store.during_check.append(land_again)

    store.during_check.append(land_again)
    with pytest.raises(Conflict) as refused:
        complete(service, traceset_id)
    assert "kept arriving" in refused.value.problems[0].message
    store.during_check.clear()
    assert service.get("ws", traceset_id).status == "pending"


@pytest.mark.parametrize(
    ("files", "threads"), [(ON_LOOP_FILES, []), (ON_LOOP_FILES + 1, ["complete"])]
)
def test_the_loop_checks_a_few_files_itself_and_hands_more_to_a_thread(
    service: TracesetService, monkeypatch: pytest.MonkeyPatch, files: int, threads: list[str]
) -> None:
    handed: list[str] = []
    to_thread = asyncio.to_thread

    async def counted(work: Callable[..., Traceset], *args: object) -> Traceset:
        handed.append(work.__name__)
        return await to_thread(work, *args)

    monkeypatch.setattr(asyncio, "to_thread", counted)
    traceset = a_job(service, files)
    done = on_loop(service, traceset.id)
    assert (done.status, handed) == ("ready", threads)
    again = on_loop(service, traceset.id)  # completed already: the same answer, as GET's
    assert again == done == service.read("ws", traceset.id)
    assert handed == threads * 2  # a few files answered on the loop again, more in a thread


@pytest.mark.parametrize("files", [1, ON_LOOP_FILES + 1])
def test_complete_again_reads_the_answer_s_page_of_files_not_all_of_them(
    service: TracesetService, complete: Complete, monkeypatch: pytest.MonkeyPatch, files: int
) -> None:
    """A repeated complete answers what GET answers, read as GET reads it: a page of
    files and their count, never every row of a traceset of 100,000 files."""
    traceset = a_job(service, files)
    complete(service, traceset.id)
    limits = pages_read(monkeypatch)
    again = complete(service, traceset.id)
    assert limits and None not in limits
    monkeypatch.undo()
    assert again == service.read("ws", traceset.id)
    assert again.file_summary.count == files and again.status == "ready"


def test_a_first_complete_reads_every_file_once_to_check_them_and_no_page_before(
    service: TracesetService, complete: Complete, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pending traceset of more files than an answer's page: complete decides from its
    status, then reads every file to check them, and the answer's page once it is ready;
    no page of files first, which would have read a thousand rows and counted them all
    only to be read again. (Under the row's lock it reads each file's digest alone.)"""
    files = ANSWER_FILES + 1
    traceset = a_job(service, files)
    limits = pages_read(monkeypatch)
    done = complete(service, traceset.id)
    monkeypatch.undo()
    # On the loop, a page of ON_LOOP_FILES tells that the traceset is for a thread.
    first = [ON_LOOP_FILES] if complete is on_loop else []
    assert limits == [*first, None, ANSWER_FILES]
    assert done == service.read("ws", traceset.id)
    assert done.status == "ready" and done.file_summary.count == files
