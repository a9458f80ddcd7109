"""``tracesets list`` searches by performance: the figure options and ``--sort``."""

from __future__ import annotations

import httpx

from tests.api.test_performance_search import RUNS, run_files
from tests.cli.test_cli import Run, as_json
from tests.flows import inspected, upload


def test_list_filters_and_sorts_by_gpu_idle(tracesets: Run, api: httpx.Client) -> None:
    uploaded = [
        upload(api, run_files(run), {"shape": {"rankCount": run.world}}) for run in RUNS[:4]
    ]
    idle = {}
    for traceset in uploaded:
        ranks = inspected(api, traceset["id"])["inspection"]["perRank"]
        pcts = sorted(r["gpu"]["idlePct"] for r in ranks)
        middle = len(pcts) // 2
        idle[traceset["id"]] = (
            pcts[middle] if len(pcts) % 2 else (pcts[middle - 1] + pcts[middle]) / 2
        )
    ceiling = sorted(idle.values())[2]
    listed = as_json(
        tracesets("list", "--json", "--gpu-idle-pct-max", str(ceiling), "--sort", "-gpu_idle_pct")
    )
    expected = sorted((i for i in idle if idle[i] <= ceiling), key=idle.__getitem__, reverse=True)
    assert [t["id"] for t in listed] == expected
    stragglers = as_json(tracesets("list", "--json", "--has-stragglers"))
    assert [t["id"] for t in stragglers] == [uploaded[2]["id"]]
    assert tracesets("list", "--sort", "idle").returncode == 2
