"""``trace_handler`` in a process without torch.distributed: the job key finds the traceset."""

from __future__ import annotations

import secrets

import httpx
import torch

from tests.server import ServerProcess
from tracesets.torch import TraceHandler, trace_handler


def profile(handler: TraceHandler, steps: int) -> None:
    model = torch.nn.Linear(8, 8)
    schedule = torch.profiler.schedule(wait=0, warmup=1, active=1, repeat=0)
    with torch.profiler.profile(
        activities=[torch.profiler.ProfilerActivity.CPU], schedule=schedule, on_trace_ready=handler
    ) as prof:
        for _ in range(steps):
            model(torch.randn(4, 8)).sum().backward()
            prof.step()


def test_each_rank_of_a_job_key_joins_one_traceset(
    server: ServerProcess, api: httpx.Client, workspace_token: str
) -> None:
    key = "run-" + secrets.token_hex(4)
    handlers = [
        trace_handler(job_key=key, rank=rank, world_size=2, url=server.url, token=workspace_token)
        for rank in (1, 0)
    ]
    profile(handlers[0], steps=4)  # two traces ready: only the first is sent
    first = handlers[0].wait(timeout=120)
    assert first is not None, handlers[0].error
    assert (first.name, first.status, first.missing) == ("rank1.pt.trace.json.gz", "pending", [0])
    profile(handlers[1], steps=2)
    last = handlers[1].wait(timeout=120)
    assert last is not None, handlers[1].error
    assert (last.traceset_id, last.status, last.missing) == (first.traceset_id, "ready", [])
    traceset = api.get(f"/api/v1/tracesets/{first.traceset_id}").json()
    assert traceset["status"] == "ready" and traceset["rankCountDerived"] == 2
    assert [f["name"] for f in traceset["files"]] == [
        "job.json",
        "rank1.pt.trace.json.gz",
        "rank0.pt.trace.json.gz",
    ]
