"""Every paged route refuses, 400 naming ``cursor``, a cursor it did not hand out.

Out of range (negative, past what SQL binds), malformed, or made by another route: each
is a clear 400, never a 500 and never a page read from the wrong place.
"""

from __future__ import annotations

import base64
import gzip
import secrets
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.analysis.run_writer import Run, rank_trace
from tests.flows import inspected, problems, request_urls, upload
from tests.server import ServerProcess

ROUTES = ("list", "files", "uploads", "ranks")
#: The largest number each route's cursor holds: its column's (64 or 32-bit, PostgreSQL).
MOST = {"list": 2**63 - 1, "files": 2**31 - 1, "uploads": 2**31 - 1, "ranks": 2**31 - 1}


def forged(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


@pytest.fixture(scope="module")
def paged(server: ServerProcess) -> Iterator[tuple[httpx.Client, dict[str, str], dict[str, str]]]:
    """A client, each route's path, and a real cursor each route handed out (its first
    page of one item), in a workspace of an inspected traceset of two ranks and a pending
    one of two files."""
    token = server.new_token("ws-cursors-" + secrets.token_hex(4))
    with httpx.Client(
        base_url=server.url, headers={"Authorization": f"Bearer {token}"}, timeout=60
    ) as api:
        run = Run(tp=1, dp=2, steps=2)
        ranked = upload(
            api,
            {f"rank-{r}.json.gz": gzip.compress(rank_trace(run, r), mtime=0) for r in range(2)},
            {"parallelism": {"dp": 2}},
        )
        assert inspected(api, ranked["id"])["inspection"]["perRankCount"] == 2
        pending = request_urls(api, {"a": b"x", "b": b"y"})["tracesetId"]
        paths = {
            "list": "/api/v1/tracesets",
            "files": f"/api/v1/tracesets/{pending}/files",
            "uploads": f"/api/v1/tracesets/{pending}/uploads",
            "ranks": f"/api/v1/tracesets/{ranked['id']}/ranks",
        }
        cursors = {}
        for route, path in paths.items():
            answer = api.get(path, params={"limit": 1})
            assert answer.status_code == 200, answer.text
            cursors[route] = answer.json()["nextCursor"]
            assert cursors[route] is not None
        yield api, paths, cursors


def refused(api: httpx.Client, path: str, cursor: str) -> str:
    """The reason of the 400 ``path`` answers ``cursor``, which names ``cursor``."""
    answer = api.get(path, params={"cursor": cursor})
    assert answer.status_code == 400, (path, cursor, answer.status_code, answer.text[:300])
    (problem,) = problems(answer)
    assert problem["member"] == "cursor"
    message: str = problem["message"]
    return message


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize(
    "number", ["past", str(2**63), "9999999999999999999", "1" + "0" * 40, "-1", "", "1.5", "0x10"]
)
def test_a_cursor_number_out_of_range_or_malformed_is_400(
    paged: tuple[httpx.Client, dict[str, str], dict[str, str]], route: str, number: str
) -> None:
    api, paths, cursors = paged
    tag = base64.urlsafe_b64decode(cursors[route] + "==").decode().partition(":")[0]
    if number == "past":
        number = str(MOST[route] + 1)
    refused(api, paths[route], forged(f"{tag}:{number}"))


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("cursor", ["not-a-cursor", "%%%", "AAAA", forged("x9:1")])
def test_a_cursor_not_made_by_the_service_is_400(
    paged: tuple[httpx.Client, dict[str, str], dict[str, str]], route: str, cursor: str
) -> None:
    api, paths, _ = paged
    refused(api, paths[route], cursor)


@pytest.mark.parametrize("route", ROUTES)
def test_the_largest_cursor_is_an_empty_page_or_the_whole_list(
    paged: tuple[httpx.Client, dict[str, str], dict[str, str]], route: str
) -> None:
    api, paths, cursors = paged
    tag = base64.urlsafe_b64decode(cursors[route] + "==").decode().partition(":")[0]
    answer = api.get(paths[route], params={"cursor": forged(f"{tag}:{MOST[route]}")})
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    assert len(body.get("items", body.get("uploads", []))) == (2 if route == "list" else 0)


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("maker", ROUTES)
def test_a_cursor_works_only_on_the_route_that_made_it(
    paged: tuple[httpx.Client, dict[str, str], dict[str, str]], route: str, maker: str
) -> None:
    api, paths, cursors = paged
    if route == maker:
        answer = api.get(paths[route], params={"cursor": cursors[maker], "limit": 1})
        assert answer.status_code == 200, answer.text
        assert answer.json()["nextCursor"] is None  # the second of two, the last
    else:
        assert maker in refused(api, paths[route], cursors[maker])
