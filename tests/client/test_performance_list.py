"""Both clients search the list by performance: figure filters and ``sort`` as keywords."""

from __future__ import annotations

import httpx

from tests.api.test_performance_search import RUNS, run_files
from tests.client.conftest import MakeClient
from tests.flows import inspected, upload
from tests.server import ServerProcess


def test_list_tracesets_takes_figure_filters_and_a_sort(
    make_client: MakeClient, server: ServerProcess, workspace_token: str, api: httpx.Client
) -> None:
    uploaded = [upload(api, run_files(run), {"shape": {"rankCount": run.world}}) for run in RUNS]
    steps = {}
    for traceset in uploaded:
        ranks = inspected(api, traceset["id"])["inspection"]["perRank"]
        medians = sorted(r["steps"]["medianUs"] / 1000 for r in ranks)
        middle = len(medians) // 2
        steps[traceset["id"]] = (
            medians[middle] if len(medians) % 2 else (medians[middle - 1] + medians[middle]) / 2
        )
    with make_client(server.url, workspace_token) as client:
        by_step = [t.id for t in client.list_tracesets(page_size=2, sort="step_ms")]
        assert by_step == sorted(steps, key=lambda i: (steps[i], list(steps).index(i)))
        ceiling = sorted(steps.values())[3]
        fast = client.list_tracesets(page_size=1, sort="-step_ms", step_ms_max=ceiling)
        assert [t.id for t in fast] == by_step[:4][::-1]
        straggling = client.list_tracesets(has_stragglers=True, gpu_idle_pct_min=0.0)
        assert [t.id for t in straggling] == [uploaded[5]["id"], uploaded[2]["id"]]
