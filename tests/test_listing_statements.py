"""A list's page is one statement: each traceset's files counted and its inspection's
verdict read with it, whatever the filters, as long as the lead filter's first batch of
candidates fills the page."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from sqlalchemy import event

from tests.arrived import arrived_service
from tracesets.records import FileSummary
from tracesets.service.catalog import TracesetService
from tracesets.vocabulary import ListFilter


@pytest.fixture
def service(tmp_path: Path) -> TracesetService:
    return arrived_service(tmp_path)


@pytest.fixture
def statements(service: TracesetService) -> Iterator[list[str]]:
    caught: list[str] = []

    def catch(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        if statement.lstrip().upper().startswith("SELECT"):
            caught.append(statement)

    event.listen(service.db.engine, "before_cursor_execute", catch)
    yield caught
    event.remove(service.db.engine, "before_cursor_execute", catch)


def create(service: TracesetService, name: str, sizes: list[int], *, family: str) -> str:
    files = [
        {"name": f"rank{i}.json", "size": size, "role": "primary", "sha256": "a" * 64}
        for i, size in enumerate(sizes)
    ]
    metadata = {"shape": {"rankCount": len(sizes)}, "workload_family": family}
    body = {"name": name, "files": files, "workloadMetadata": metadata}
    traceset, _ = service.create_upload("ws", orjson.dumps(body), "http://127.0.0.1:1")
    return traceset.id


@pytest.mark.parametrize(
    ("where", "limit"),
    [
        (ListFilter(), 20),
        (ListFilter(workload_family="llama"), 20),  # short: its candidates ran out
        (ListFilter(workload_family="llama", status="ready"), 1),
    ],
)
def test_a_page_is_one_statement_with_files_counted_and_verdicts(
    service: TracesetService, statements: list[str], where: ListFilter, limit: int
) -> None:
    service.complete("ws", create(service, "first", [1], family="llama"))
    done = create(service, "done", [10, 20, 30], family="llama")
    service.complete("ws", done)  # its files received, its inspection queued
    pending = create(service, "pending", [5, 6], family="llama")
    create(service, "other", [1], family="gpt")
    statements.clear()
    page = service.list_page("ws", where, limit=limit, cursor=None)  # reads limit + 1
    assert len(statements) == 1, statements
    listed = {item.id: item for item in page.items}
    assert listed[done].file_summary == FileSummary(count=3, bytes=60, received=3)
    assert listed[done].inspection_status is not None
    if where.status is None:
        assert listed[pending].file_summary == FileSummary(count=2, bytes=11, received=0)
        assert listed[pending].inspection_status is None
    newest_first = ["other", "pending", "done", "first"]
    if where.status is not None:
        newest_first = ["done"]  # and "first", read only to know that a page follows
    elif where.workload_family is not None:
        newest_first = newest_first[1:]
    assert [item.name for item in page.items] == newest_first


def test_a_short_page_of_several_filters_reads_how_far_the_candidates_went(
    service: TracesetService, statements: list[str]
) -> None:
    """The other filters may have dropped candidates: the batch's extent says whether
    older ones remain to be read."""
    done = create(service, "done", [1], family="llama")
    service.complete("ws", done)
    create(service, "pending", [1], family="llama")
    statements.clear()
    page = service.list_page(
        "ws", ListFilter(workload_family="llama", status="ready"), limit=5, cursor=None
    )
    assert [item.id for item in page.items] == [done]
    assert len(statements) == 2
