"""One vocabulary: every part of Tracesets reads its filters from ``tracesets.vocabulary``.

Each test checks one reader against ``FILTERS``: a filter added there and missed by a
reader fails here, as does a reader's own filter the vocabulary does not know.
"""

from __future__ import annotations

import asyncio
import json
import re
from dataclasses import fields
from pathlib import Path
from typing import Any

import httpx
from typer.testing import CliRunner

from tracesets.cli.main import command_line
from tracesets.client import AsyncClient, Client
from tracesets.db.listing import FIGURE_FILTERS, FILTER_COLUMNS, VERDICT_COLUMNS
from tracesets.vocabulary import FILTERS, ListFilter, ListFilters
from tracesets.web.pages import RENDERED

NAMES = [f.name for f in FILTERS]
OPENAPI = Path(__file__).resolve().parents[1] / "openapi.json"


def test_the_typed_forms_name_the_same_filters_in_the_same_order() -> None:
    assert [f.name for f in fields(ListFilter)] == NAMES
    assert list(ListFilters.__annotations__) == NAMES


def test_the_database_has_a_column_for_each_filter() -> None:
    assert sorted([*FILTER_COLUMNS, *VERDICT_COLUMNS, *FIGURE_FILTERS]) == sorted(NAMES)


def test_the_list_route_takes_each_filter_and_its_alias() -> None:
    operation = json.loads(OPENAPI.read_text())["paths"]["/api/v1/tracesets"]["get"]
    described = {p["name"]: p for p in operation["parameters"]}
    aliases = [f.alias for f in FILTERS if f.alias is not None]
    assert sorted(described) == sorted([*NAMES, *aliases, "limit", "cursor", "sort"])
    for term in FILTERS:
        assert described[term.name]["description"] == term.description
        if term.maximum is not None:
            assert described[term.name]["schema"]["anyOf"][0]["maximum"] == term.maximum


def test_the_command_line_has_an_option_for_each_filter() -> None:
    shown = CliRunner().invoke(command_line(), ["list", "--help"], env={"COLUMNS": "200"}).output
    options = set(re.findall(r"--[a-z-]+", shown))
    for name in NAMES:
        assert "--" + name.replace("_", "-") in options
    assert {"--no-inspected-ok", "--no-ranks-consistent"} <= options


def test_the_page_is_served_the_vocabulary() -> None:
    module = RENDERED["vocabulary.js"].body.decode()
    exports = dict(re.findall(r"^export const (\w+) = (.*);$", module, re.MULTILINE))
    assert [f["name"] for f in json.loads(exports["FILTERS"])] == NAMES
    assert json.loads(exports["STATUSES"]) == ["pending", "ready", "promoted"]
    assert json.loads(exports["LIMITS"])["filesPerTraceset"] >= 131_072


def test_a_filter_goes_out_as_its_query_parameter() -> None:
    where = ListFilter(inspected_ok=False, ranks_consistent=True, rank_count=4)
    assert where.query() == {"rank_count": 4, "inspected_ok": "false", "ranks_consistent": "true"}
    assert ListFilter().query() == {}


def _answering(seen: list[httpx.QueryParams]) -> Any:
    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request.url.params)
        return httpx.Response(200, json={"items": [], "nextCursor": None})

    return handle


def test_both_clients_send_every_filter() -> None:
    asked: ListFilters = {
        "status": "ready",
        "rank_count": 8,
        "workload_family": "llama",
        "workload_name": "70b",
        "global_batch_size": 512,
        "inspected_ok": False,
        "ranks_consistent": True,
        "gpu_idle_pct_max": 40.5,
        "gpu_idle_pct_min": 2,
        "comm_overlap_pct_min": 12.25,
        "step_ms_max": 950,
        "has_stragglers": True,
        "regressed": False,
    }
    assert list(asked) == NAMES  # every filter of the vocabulary is asked for
    expected = {**ListFilter(**asked).query(), "limit": "7"}
    seen: list[httpx.QueryParams] = []
    transport = httpx.MockTransport(_answering(seen))
    with Client("http://127.0.0.1:9", "tsk_test_token_0000", transport=transport) as client:
        assert list(client.list_tracesets(page_size=7, **asked)) == []

    async def listed() -> None:
        async with AsyncClient(
            "http://127.0.0.1:9", "tsk_test_token_0000", transport=transport
        ) as client:
            assert [t async for t in client.list_tracesets(page_size=7, **asked)] == []

    asyncio.run(listed())
    assert len(seen) == 2
    for params in seen:
        assert {k: str(v) for k, v in expected.items()} == dict(params)


def test_the_list_command_sends_the_filters_given(monkeypatch: Any) -> None:
    seen: list[httpx.QueryParams] = []
    transport = httpx.MockTransport(_answering(seen))
    monkeypatch.setattr(
        "tracesets.cli.options.Client",
        lambda url, token, **_: Client(url, token, transport=transport),
    )
    args = ["list", "--json", "--no-inspected-ok", "--ranks-consistent", "--status", "ready"]
    args += ["--url", "http://127.0.0.1:9", "--token", "tsk_test_token_0000"]
    shown = CliRunner().invoke(command_line(), args)
    assert shown.exit_code == 0, shown.output
    assert [dict(params) for params in seen] == [
        {"status": "ready", "inspected_ok": "false", "ranks_consistent": "true", "limit": "51"}
    ]
