"""The list searched by performance over HTTP: filters and sorts on the medians over ranks
of each inspected traceset's figures, paged through the cursor of each order."""

from __future__ import annotations

import gzip
import secrets
import statistics
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from tests.analysis.run_writer import Run, rank_trace
from tests.flows import inspected, problems, request_urls, upload
from tests.server import ServerProcess


def run_files(run: Run) -> dict[str, bytes]:
    return {
        f"rank-{r}.json.gz": gzip.compress(rank_trace(run, r), mtime=0) for r in range(run.world)
    }


#: Runs whose figures differ: other seeds and shapes, a straggler, a Gloo run without GPU
#: events (steps, but no GPU idle % or overlap).
RUNS = (
    Run(tp=2, dp=2, steps=3, seed=1),
    Run(tp=2, dp=2, steps=3, seed=2, kernels_per_step=4),
    Run(tp=2, dp=2, steps=4, seed=3, slow={0: 2.0}),
    Run(tp=2, dp=1, steps=3, seed=4, kernels_per_step=20),
    Run(tp=2, dp=2, steps=3, seed=5, cpu_only=True),
    Run(tp=1, dp=3, steps=5, seed=6, slow={1: 3.0}),
)


@dataclass(frozen=True)
class Listed:
    id: str
    gpu_idle_pct: float | None
    comm_overlap_pct: float | None
    step_ms: float | None
    has_stragglers: bool | None


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def _figures(traceset: dict[str, Any]) -> Listed:
    """The medians over ranks of what the inspection shows of each rank."""
    inspection = traceset["inspection"]
    assert inspection["status"] == "done", inspection
    ranks = inspection["perRank"]
    gpus = [r["gpu"] for r in ranks if r["gpu"] is not None]
    return Listed(
        traceset["id"],
        _median([g["idlePct"] for g in gpus if g["idlePct"] is not None]),
        _median([g["overlapPct"] for g in gpus if g["overlapPct"] is not None]),
        _median([r["steps"]["medianUs"] / 1000 for r in ranks if r["steps"]["medianUs"]]),
        any(r["straggler"] for r in ranks),
    )


@pytest.fixture(scope="module")
def searched(server: ServerProcess) -> Iterator[tuple[httpx.Client, list[Listed], str]]:
    """A workspace of the runs' tracesets, oldest first with their figures, and one more
    traceset never completed (so never inspected): it has no figure."""
    token = server.new_token("ws-" + secrets.token_hex(6))
    with httpx.Client(
        base_url=server.url, headers={"Authorization": f"Bearer {token}"}, timeout=60
    ) as api:
        ids = [
            upload(api, run_files(run), {"shape": {"rankCount": run.world}})["id"] for run in RUNS
        ]
        pending = request_urls(api, {"rank-0.json": b"{}"}, {"shape": {"rankCount": 1}})
        yield api, [_figures(inspected(api, i)) for i in ids], pending["tracesetId"]


def _ids(api: httpx.Client, **params: Any) -> list[str]:
    answer = api.get("/api/v1/tracesets", params=params)
    assert answer.status_code == 200, answer.text
    return [t["id"] for t in answer.json()["items"]]


def _paged(api: httpx.Client, limit: int, **params: Any) -> list[str]:
    """Every id the list gives, page after page of ``limit`` through its cursor."""
    seen: list[str] = []
    cursor: str | None = None
    while True:
        query = {**params, "limit": limit, **({"cursor": cursor} if cursor else {})}
        answer = api.get("/api/v1/tracesets", params=query)
        assert answer.status_code == 200, answer.text
        body = answer.json()
        assert len(body["items"]) <= limit
        seen.extend(t["id"] for t in body["items"])
        if (cursor := body["nextCursor"]) is None:
            return seen


def test_the_runs_have_the_figures_the_search_needs(
    searched: tuple[httpx.Client, list[Listed], str],
) -> None:
    _, runs, _ = searched
    idle = [r.gpu_idle_pct for r in runs if r.gpu_idle_pct is not None]
    assert len(set(idle)) == len(idle) == 5  # distinct: the sorted order is not a tie-break
    assert runs[4].gpu_idle_pct is None and runs[4].step_ms is not None
    assert [r.has_stragglers for r in runs] == [False, False, True, False, False, True]


def test_each_filter_matches_the_median_over_ranks(
    searched: tuple[httpx.Client, list[Listed], str],
) -> None:
    api, runs, _ = searched
    newest = runs[::-1]
    idle = sorted(r.gpu_idle_pct for r in runs if r.gpu_idle_pct is not None)
    overlap = sorted(r.comm_overlap_pct for r in runs if r.comm_overlap_pct is not None)
    steps = sorted(r.step_ms for r in runs if r.step_ms is not None)
    for value in (idle[0], idle[2], idle[-1]):
        assert _ids(api, gpu_idle_pct_max=value) == [
            r.id for r in newest if r.gpu_idle_pct is not None and r.gpu_idle_pct <= value
        ]
        assert _ids(api, gpu_idle_pct_min=value) == [
            r.id for r in newest if r.gpu_idle_pct is not None and r.gpu_idle_pct >= value
        ]
    for value in (overlap[0], overlap[len(overlap) // 2]):
        assert _ids(api, comm_overlap_pct_min=value) == [
            r.id for r in newest if r.comm_overlap_pct is not None and r.comm_overlap_pct >= value
        ]
    for value in (steps[0], steps[3]):
        assert _ids(api, step_ms_max=value) == [
            r.id for r in newest if r.step_ms is not None and r.step_ms <= value
        ]
    assert _ids(api, has_stragglers="true") == [runs[5].id, runs[2].id]
    assert _ids(api, has_stragglers="false") == [r.id for r in newest if not r.has_stragglers]
    low, high = idle[1], idle[3]
    assert _ids(api, gpu_idle_pct_min=low, gpu_idle_pct_max=high, has_stragglers="false") == [
        r.id
        for r in newest
        if r.gpu_idle_pct is not None and low <= r.gpu_idle_pct <= high and not r.has_stragglers
    ]
    assert _ids(api, gpu_idle_pct_max=1e300, rank_count=3) == [runs[5].id]


@pytest.mark.parametrize(
    "sort",
    [
        "gpu_idle_pct",
        "-gpu_idle_pct",
        "comm_overlap_pct",
        "-comm_overlap_pct",
        "step_ms",
        "-step_ms",
    ],
)
def test_a_sorted_list_pages_through_each_once_in_order(
    searched: tuple[httpx.Client, list[Listed], str], sort: str
) -> None:
    api, runs, _ = searched
    figure = sort.removeprefix("-")
    having = [(getattr(r, figure), n, r.id) for n, r in enumerate(runs)]
    order = sorted((h for h in having if h[0] is not None), reverse=sort.startswith("-"))
    expected = [i for _, _, i in order]
    for limit in (1, 2, 4, 50):
        assert _paged(api, limit, sort=sort) == expected
    straggling = [i for i in expected if runs[[r.id for r in runs].index(i)].has_stragglers]
    assert _paged(api, 1, sort=sort, has_stragglers="true") == straggling


def test_newest_first_pages_a_figure_filter_through_its_cursor(
    searched: tuple[httpx.Client, list[Listed], str],
) -> None:
    api, runs, _ = searched
    expected = [r.id for r in runs[::-1] if r.step_ms is not None]
    assert _paged(api, 2, step_ms_max=1e12) == expected
    assert _paged(api, 2, step_ms_max=1e12, sort="-created") == expected


def test_a_traceset_without_figures_is_in_no_search(
    searched: tuple[httpx.Client, list[Listed], str],
) -> None:
    api, _, pending = searched
    assert _ids(api)[0] == pending
    for params in (
        {"gpu_idle_pct_min": 0},
        {"step_ms_max": 1e12},
        {"has_stragglers": "false"},
        {"sort": "step_ms"},
    ):
        assert pending not in _ids(api, **params)


def test_a_cursor_continues_only_the_sort_it_was_made_under(
    searched: tuple[httpx.Client, list[Listed], str],
) -> None:
    api, _, _ = searched
    made: dict[str, str] = {}
    for sort in ("-created", "gpu_idle_pct", "-gpu_idle_pct", "step_ms"):
        answer = api.get("/api/v1/tracesets", params={"limit": 1, "sort": sort})
        made[sort] = answer.json()["nextCursor"]
    for sort, cursor in made.items():
        for other in made:
            answer = api.get("/api/v1/tracesets", params={"sort": other, "cursor": cursor})
            if other == sort:
                assert answer.status_code == 200, answer.text
                continue
            assert answer.status_code == 400, answer.text
            (problem,) = problems(answer)
            assert problem["member"] == "cursor", problem
            assert sort in problem["message"], problem


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("gpu_idle_pct_max", "nan"),
        ("gpu_idle_pct_max", "inf"),
        ("gpu_idle_pct_min", "-Infinity"),
        ("comm_overlap_pct_min", "1e400"),
        ("step_ms_max", "ten"),
        ("step_ms_max", ""),
        ("has_stragglers", "maybe"),
        ("sort", "idle"),
        ("sort", "created"),
        ("sort", "-has_stragglers"),
    ],
)
def test_a_malformed_value_is_refused_by_name(
    searched: tuple[httpx.Client, list[Listed], str], name: str, value: str
) -> None:
    api, _, _ = searched
    answer = api.get("/api/v1/tracesets", params={name: value})
    assert answer.status_code == 400, answer.text
    assert [p["member"] for p in problems(answer)] == [name]


def test_a_sorted_cursor_that_was_tampered_with_is_refused(
    searched: tuple[httpx.Client, list[Listed], str],
) -> None:
    import base64

    api, _, _ = searched
    for text in ("s1:step_ms:nan:5", "s1:step_ms:1.5:x", "s1:step_ms:1.5:99999999999999999999"):
        cursor = base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")
        answer = api.get("/api/v1/tracesets", params={"sort": "step_ms", "cursor": cursor})
        assert answer.status_code == 400, answer.text
        assert [p["member"] for p in problems(answer)] == ["cursor"]
