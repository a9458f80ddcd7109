"""Baselines at upload, the regression found when inspection finishes, and its filter."""

from __future__ import annotations

import secrets
from typing import Any

import httpx

from tests.analysis.run_writer import Run
from tests.api.test_rank_figures import run_files
from tests.flows import inspected, problems, spec, upload
from tests.server import ServerProcess

SLOWER = Run(tp=2, dp=2, steps=3, seed=2, slow={r: 1.5 for r in range(4)})
LLAMA = {"workload_family": "llama", "shape": {"rankCount": 4}}


def baseline_of(api: httpx.Client, metadata: dict[str, Any] = LLAMA) -> dict[str, Any]:
    return inspected(api, upload(api, run_files(Run(tp=2, dp=2, steps=3, seed=1)), metadata)["id"])


def listed(api: httpx.Client, **params: str) -> list[str]:
    answer = api.get("/api/v1/tracesets", params=params)
    assert answer.status_code == 200, answer.text
    return [t["id"] for t in answer.json()["items"]]


def test_a_named_baseline_flags_a_slower_run_and_outlives_its_deletion(
    api: httpx.Client,
) -> None:
    baseline = baseline_of(api, {"shape": {"rankCount": 4}})
    assert baseline["baselineId"] is None and baseline["inspection"].get("regression") is None
    slower = upload(api, run_files(SLOWER), {"shape": {"rankCount": 4}}, baseline=baseline["id"])
    assert slower["baselineId"] == baseline["id"]
    inspection = inspected(api, slower["id"])["inspection"]
    regression = inspection["regression"]
    assert regression["baselineId"] == baseline["id"] and regression["regressed"] is True
    assert regression["stepRatio"] > 1.2
    (said,) = [w for w in inspection["warnings"] if w.startswith("Regression against ")]
    assert said.startswith(f"Regression against {baseline['id']}: the median step is ")
    assert regression["contributors"] and regression["contributors"][0]["name"] in said
    assert listed(api, regressed="true") == [slower["id"]]
    assert listed(api, regressed="false") == []
    assert api.delete(f"/api/v1/tracesets/{baseline['id']}").status_code == 204
    after = api.get(f"/api/v1/tracesets/{slower['id']}").json()
    assert after["inspection"]["warnings"] == inspection["warnings"]
    assert after["inspection"]["regression"] == regression
    assert after["baselineId"] == baseline["id"]


def test_the_latest_promoted_run_of_the_workload_is_the_baseline(api: httpx.Client) -> None:
    older, newer = baseline_of(api), baseline_of(api)
    other_family = baseline_of(api, {"workload_family": "gpt", "shape": {"rankCount": 4}})
    for traceset in (newer, older, other_family):  # newer is promoted first: older is latest
        answer = api.post(f"/api/v1/tracesets/{traceset['id']}/promote", json={})
        assert answer.status_code == 200, answer.text
    again = upload(api, run_files(Run(tp=2, dp=2, steps=3, seed=1)), LLAMA)
    assert again["baselineId"] is None  # chosen when its inspection finishes
    done = inspected(api, again["id"])
    assert done["baselineId"] == older["id"]
    assert done["inspection"]["regression"]["regressed"] is False
    assert not any(w.startswith("Regression") for w in done["inspection"]["warnings"])
    assert listed(api, regressed="false") == [again["id"]]
    unmatched = upload(api, run_files(Run(tp=2, dp=2, steps=3)), {"shape": {"rankCount": 4}})
    alone = inspected(api, unmatched["id"])
    assert alone["baselineId"] is None and alone["inspection"].get("regression") is None


def test_an_unusable_baseline_is_refused_and_nothing_stored(
    api: httpx.Client, server: ServerProcess
) -> None:
    elsewhere = server.new_token("ws-" + secrets.token_hex(6))
    with httpx.Client(base_url=server.url, timeout=60) as other:
        other.headers["Authorization"] = f"Bearer {elsewhere}"
        foreign = upload(other, {"x.json": b"{}"}, {"shape": {"rankCount": 1}})["id"]
    for given in ("nope", 7, foreign.upper(), secrets.token_hex(16), foreign):
        body = {
            "name": "t",
            "files": [spec("x.json", b"{}")],
            "workloadMetadata": {"shape": {"rankCount": 1}},
            "baselineId": given,
        }
        answer = api.post("/api/v1/tracesets/upload-url", json=body)
        assert answer.status_code == 400, answer.text
        assert [p["member"] for p in problems(answer)] == ["baselineId"]
    assert listed(api) == []
