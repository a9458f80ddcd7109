"""A comparison's operators over HTTP: every step or the first, by change, paged."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.analysis.run_writer import Run
from tests.api.test_compare import inspected_run, paged
from tests.flows import problems
from tests.server import ServerProcess

#: (name, count, total µs, first-step count, first-step µs) of each side.
OURS = [("gemm", 8, 800.0, 2, 210.0), ("aten::mm", 8, 80.0, 2, 20.0), ("(other)", 3, 9.0, 1, 3.0)]
THEIRS = [("gemm", 8, 600.0, 2, 150.0), ("aten::add", 4, 100.0, 0, 0.0)]


def store_operators(server: ServerProcess, traceset_id: str, rows: list[tuple[Any, ...]]) -> None:
    """Operator rows as an inspection's end stores them, for a run whose traces have none."""
    ((seq,),) = server.query(f"SELECT seq FROM tracesets WHERE id = '{traceset_id}'")
    values = ", ".join(
        f"({seq}, {position}, '{name}', {count}, {total}, {first}, {first_total})"
        for position, (name, count, total, first, first_total) in enumerate(rows)
    )
    server.execute(f"DELETE FROM inspection_operators WHERE traceset_seq = {seq}")
    server.execute(
        "INSERT INTO inspection_operators (traceset_seq, position, name, count, total_us, "
        f"first_count, first_total_us) VALUES {values}"
    )


@pytest.fixture(scope="module")
def path(server: ServerProcess) -> Iterator[tuple[httpx.Client, str]]:
    token = server.new_token("ws-" + secrets.token_hex(6))
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=server.url, headers=headers, timeout=60) as api:
        ours = inspected_run(api, Run(tp=2, dp=1, steps=2, cpu_only=True))["id"]
        theirs = inspected_run(api, Run(tp=2, dp=1, steps=2, cpu_only=True, seed=5))["id"]
        store_operators(server, ours, OURS)
        store_operators(server, theirs, THEIRS)
        yield api, f"/api/v1/tracesets/{ours}/compare/{theirs}"


def test_every_step_by_change_then_name(path: tuple[httpx.Client, str]) -> None:
    api, base = path
    answer = api.get(base + "/operators")
    assert answer.status_code == 200, answer.text
    assert answer.json() == {
        "items": [
            row("gemm", 8, 600.0, 8, 800.0),
            row("aten::add", 4, 100.0, 0, 0.0),
            row("aten::mm", 0, 0.0, 8, 80.0),
            row("(other)", 0, 0.0, 3, 9.0),
        ],
        "nextCursor": None,
    }
    assert answer.json() == api.get(base + "/operators", params={"step": "all"}).json()
    pages = paged(api, base + "/operators", limit=3)
    assert [len(p) for p in pages] == [3, 1]
    assert [r for p in pages for r in p] == answer.json()["items"]


def test_the_first_step_leaves_out_operators_of_other_steps(path: tuple[httpx.Client, str]) -> None:
    api, base = path
    answer = api.get(base + "/operators", params={"step": "first"})
    assert answer.status_code == 200, answer.text
    assert answer.json()["items"] == [
        row("gemm", 2, 150.0, 2, 210.0),
        row("aten::mm", 0, 0.0, 2, 20.0),
        row("(other)", 0, 0.0, 1, 3.0),
    ]


def test_the_headline_names_operators_that_are_no_kernel(path: tuple[httpx.Client, str]) -> None:
    api, base = path
    headline = api.get(base).json()["headline"]
    assert headline["contributors"] == [
        {"kind": "operator", "name": "gemm", "diffUs": 200.0},
        {"kind": "operator", "name": "aten::add", "diffUs": -100.0},
        {"kind": "operator", "name": "aten::mm", "diffUs": 80.0},
    ]


def test_a_bad_step_is_400_naming_it(path: tuple[httpx.Client, str]) -> None:
    api, base = path
    answer = api.get(base + "/operators", params={"step": "all,first"})
    assert answer.status_code == 400
    assert [p["member"] for p in problems(answer)] == ["step"]


def row(name: str, b_count: int, b_total: float, count: int, total: float) -> dict[str, Any]:
    return {
        "name": name,
        "baselineCount": b_count,
        "baselineTotalUs": b_total,
        "count": count,
        "totalUs": total,
        "countDiff": count - b_count,
        "totalUsDiff": total - b_total,
    }
