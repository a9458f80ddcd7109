"""Comparing two tracesets over HTTP: the headline, ranks and kernels, paged, and refusals."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.analysis.run_writer import Run
from tests.api.test_rank_figures import run_files
from tests.flows import inspected, problems, request_urls, send, spec, upload
from tests.server import ServerProcess

BREAKDOWN = ("idleUs", "computeUs", "nonComputeUs", "idlePct", "computePct", "nonComputePct")


def inspected_run(api: httpx.Client, run: Run) -> dict[str, Any]:
    traceset = upload(api, run_files(run), {"shape": {"rankCount": run.world}})
    return inspected(api, traceset["id"])


def every_rank(api: httpx.Client, traceset_id: str) -> list[dict[str, Any]]:
    answer = api.get(f"/api/v1/tracesets/{traceset_id}/ranks", params={"limit": 1000})
    assert answer.status_code == 200 and answer.json()["nextCursor"] is None
    items: list[dict[str, Any]] = answer.json()["items"]
    return items


def kernel_sums(ranks: list[dict[str, Any]]) -> dict[str, tuple[int, float]]:
    sums: dict[str, tuple[int, float]] = {}
    for rank in ranks:
        for kernel in rank["topKernels"]:
            if kernel["name"] != "other":
                count, total = sums.get(kernel["name"], (0, 0.0))
                sums[kernel["name"]] = (count + kernel["count"], total + kernel["sumUs"])
    return sums


def paged(api: httpx.Client, path: str, **params: Any) -> list[list[dict[str, Any]]]:
    pages, cursor = [], None
    while True:
        answer = api.get(path, params={**params, **({"cursor": cursor} if cursor else {})})
        assert answer.status_code == 200, answer.text
        pages.append(answer.json()["items"])
        cursor = answer.json()["nextCursor"]
        if cursor is None:
            return pages


def supporting_only(api: httpx.Client) -> str:
    """A ready traceset of one supporting file: it has no inspection."""
    body = {"name": "notes", "files": [spec("notes.txt", b"hi", "supporting")]}
    created = api.post("/api/v1/tracesets/upload-url", json=body).json()
    send(created["uploads"][0], b"hi")
    done = api.post(f"/api/v1/tracesets/{created['tracesetId']}/complete")
    assert done.status_code == 200 and done.json()["inspection"] is None, done.text
    return str(created["tracesetId"])


@pytest.fixture(scope="module")
def pair(server: ServerProcess) -> Iterator[tuple[httpx.Client, dict[str, Any], dict[str, Any]]]:
    """A baseline and a traceset whose every step is 1.5 times slower, in one workspace."""
    token = server.new_token("ws-" + secrets.token_hex(6))
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=server.url, headers=headers, timeout=60) as api:
        baseline = inspected_run(api, Run(tp=2, dp=2, steps=3, seed=1))
        slower = Run(tp=2, dp=2, steps=3, seed=2, slow={r: 1.5 for r in range(4)})
        yield api, inspected_run(api, slower), baseline


def test_a_comparison_matches_ranks_and_sums_kernels(
    pair: tuple[httpx.Client, dict[str, Any], dict[str, Any]],
) -> None:
    api, traceset, baseline = pair
    answer = api.get(f"/api/v1/tracesets/{traceset['id']}/compare/{baseline['id']}")
    assert answer.status_code == 200, answer.text
    compared = answer.json()
    assert (compared["tracesetId"], compared["baselineId"]) == (traceset["id"], baseline["id"])
    assert (compared["rankCount"], compared["baselineRankCount"]) == (4, 4)
    assert compared["perRankCompared"] is True and compared["perRankNote"] is None
    ours, theirs = every_rank(api, traceset["id"]), every_rank(api, baseline["id"])
    assert [row["rank"] for row in compared["ranks"]] == [0, 1, 2, 3]
    assert compared["ranksNextCursor"] is None
    for row, a, b in zip(compared["ranks"], ours, theirs, strict=True):
        assert row["present"] == "both"
        assert row["traceset"] == {
            **{name: a["gpu"][name] for name in BREAKDOWN},
            "stepMs": a["steps"]["medianUs"] / 1000,
        }
        assert row["baseline"]["idleUs"] == b["gpu"]["idleUs"]
        assert row["diff"]["idleUs"] == pytest.approx(a["gpu"]["idleUs"] - b["gpu"]["idleUs"])
        assert row["stepRatio"] == pytest.approx(
            a["steps"]["medianUs"] / b["steps"]["medianUs"], abs=1e-4
        )
    mine, base = kernel_sums(ours), kernel_sums(theirs)
    assert {k["name"] for k in compared["kernels"]} == mine.keys() | base.keys()
    for kernel in compared["kernels"]:
        count, total = mine.get(kernel["name"], (0, 0.0))
        assert (kernel["count"], kernel["sumUs"]) == (count, pytest.approx(total))
        assert kernel["diffUs"] == pytest.approx(total - base.get(kernel["name"], (0, 0.0))[1])
    changes = [abs(k["diffUs"]) for k in compared["kernels"]]
    assert changes == sorted(changes, reverse=True)
    headline = compared["headline"]
    assert headline["stepMs"] == traceset_step_ms(ours)
    assert headline["baselineStepMs"] == traceset_step_ms(theirs)
    assert headline["stepRatio"] == round(headline["stepMs"] / headline["baselineStepMs"], 4)
    assert headline["stepRatio"] > 1.2
    assert headline["gpuIdleDiffPct"] == pytest.approx(
        headline["gpuIdlePct"] - headline["baselineGpuIdlePct"], abs=0.01
    )
    assert 1 <= len(headline["contributors"]) <= 3
    contributors = headline["contributors"]
    assert [abs(c["diffUs"]) for c in contributors] == sorted(
        (abs(c["diffUs"]) for c in contributors), reverse=True
    )
    assert not any(c["name"].startswith("ProfilerStep#") for c in contributors)
    top = compared["kernels"][0]
    assert abs(contributors[0]["diffUs"]) >= abs(top["diffUs"])
    assert {"kind": "kernel", "name": top["name"], "diffUs": top["diffUs"]} in contributors or (
        len(contributors) == 3 and abs(contributors[-1]["diffUs"]) >= abs(top["diffUs"])
    )


def traceset_step_ms(ranks: list[dict[str, Any]]) -> float:
    steps: list[float] = sorted(r["steps"]["medianUs"] / 1000 for r in ranks)
    return (steps[1] + steps[2]) / 2


def test_ranks_and_kernels_page_on(
    pair: tuple[httpx.Client, dict[str, Any], dict[str, Any]],
) -> None:
    api, traceset, baseline = pair
    base = f"/api/v1/tracesets/{traceset['id']}/compare/{baseline['id']}"
    whole = api.get(base).json()
    rank_pages = paged(api, base + "/ranks", limit=3)
    assert [len(p) for p in rank_pages] == [3, 1]
    assert [row for p in rank_pages for row in p] == whole["ranks"]
    kernel_pages = paged(api, base + "/kernels", limit=5)
    assert all(len(p) == 5 for p in kernel_pages[:-1])
    assert [row for p in kernel_pages for row in p] == whole["kernels"]


def test_different_rank_counts_compare_on_aggregates(
    pair: tuple[httpx.Client, dict[str, Any], dict[str, Any]],
) -> None:
    api, traceset, _ = pair
    wider = inspected_run(api, Run(tp=2, dp=3, steps=3, seed=3))
    answer = api.get(f"/api/v1/tracesets/{wider['id']}/compare/{traceset['id']}")
    assert answer.status_code == 200, answer.text
    compared = answer.json()
    assert (compared["rankCount"], compared["baselineRankCount"]) == (6, 4)
    assert compared["perRankCompared"] is False and compared["ranks"] == []
    assert "different rank counts (6 and 4)" in compared["perRankNote"]
    assert compared["kernels"] and compared["headline"]["stepRatio"] is not None
    ranks = api.get(f"/api/v1/tracesets/{wider['id']}/compare/{traceset['id']}/ranks")
    assert ranks.json() == {"items": [], "nextCursor": None}


@pytest.mark.parametrize("route", ["", "/ranks", "/kernels", "/operators"])
def test_refusals_name_the_traceset_at_fault(
    pair: tuple[httpx.Client, dict[str, Any], dict[str, Any]],
    server: ServerProcess,
    route: str,
) -> None:
    api, traceset, baseline = pair
    ours, theirs = traceset["id"], baseline["id"]

    def refused(first: str, second: str, status: int) -> dict[str, Any]:
        answer = api.get(f"/api/v1/tracesets/{first}/compare/{second}{route}")
        assert answer.status_code == status, answer.text
        (problem,) = problems(answer)
        return problem

    assert refused(ours, ours, 400)["member"] == "baselineId"
    unknown = secrets.token_hex(16)
    assert refused(unknown, theirs, 404)["member"] == "tracesetId"
    assert refused(ours, unknown, 404) == {
        "member": "baselineId",
        "value": unknown,
        "message": f"No traceset {unknown} in this workspace",
    }
    elsewhere = server.new_token("ws-" + secrets.token_hex(6))
    with httpx.Client(base_url=server.url, timeout=60) as other:
        other.headers["Authorization"] = f"Bearer {elsewhere}"
        foreign = upload(other, {"x.json": b"{}"}, {"shape": {"rankCount": 1}})
    assert refused(ours, foreign["id"], 404)["member"] == "baselineId"
    pending = request_urls(api, {"y.json": b"{}"}, {"shape": {"rankCount": 1}})["tracesetId"]
    problem = refused(pending, theirs, 409)
    assert problem["member"] == "tracesetId" and "still being uploaded" in problem["message"]
    assert refused(ours, supporting_only(api), 409)["member"] == "baselineId"
    deleted = upload(api, {"z.json": b"{}"}, {"shape": {"rankCount": 1}})["id"]
    assert api.delete(f"/api/v1/tracesets/{deleted}").status_code == 204
    assert refused(deleted, theirs, 404)["member"] == "tracesetId"


@pytest.mark.parametrize(
    ("route", "params", "member"),
    [
        ("/ranks", {"limit": 0}, "limit"),
        ("/kernels", {"limit": 1001}, "limit"),
        ("/kernels", {"cursor": "bm90IGEgY3Vyc29y"}, "cursor"),
        ("/ranks", {"cursor": "Y2sxOjE"}, "cursor"),  # a kernels cursor
        ("/operators", {"step": "last"}, "step"),
    ],
)
def test_bad_parameters_are_400_naming_them(
    pair: tuple[httpx.Client, dict[str, Any], dict[str, Any]],
    route: str,
    params: dict[str, Any],
    member: str,
) -> None:
    api, traceset, baseline = pair
    answer = api.get(
        f"/api/v1/tracesets/{traceset['id']}/compare/{baseline['id']}{route}", params=params
    )
    assert answer.status_code == 400, answer.text
    assert [p["member"] for p in problems(answer)] == [member]
