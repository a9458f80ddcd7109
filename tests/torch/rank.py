"""One rank of a small training job: gloo on CPU, a few profiled steps, an all-reduce.

Run as ``python -m tests.torch.rank RANK WORLD STORE_FILE URL TOKEN [--die-before-upload]``;
the ranks meet through a FileStore (no port), each profiles its steps and sends its
trace through ``tracesets.torch.trace_handler``. ``--die-before-upload`` kills the process
(SIGKILL) at the moment its trace would be sent, after every collective has run.
"""

from __future__ import annotations

import os
import signal
import sys
from typing import Any

import torch
import torch.distributed as dist
from torch import nn

from tracesets.client.sync import Client
from tracesets.torch import trace_handler

STEPS = 4  # the trace is ready at the last step: no collective runs after it


def main(argv: list[str]) -> int:
    rank, world, store_file, url, token = int(argv[0]), int(argv[1]), argv[2], argv[3], argv[4]
    if "--die-before-upload" in argv:

        def die(*_: Any, **__: Any) -> None:
            os.kill(os.getpid(), signal.SIGKILL)

        Client.send_file = die  # type: ignore[method-assign]
        Client.send_uploads = die  # type: ignore[method-assign]
    torch.manual_seed(rank)
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{store_file}", rank=rank, world_size=world)
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 8))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    handler = trace_handler(name="a small job", url=url, token=token)
    schedule = torch.profiler.schedule(wait=1, warmup=1, active=STEPS - 2, repeat=1)
    with torch.profiler.profile(
        activities=[torch.profiler.ProfilerActivity.CPU], schedule=schedule, on_trace_ready=handler
    ) as prof:
        for _ in range(STEPS):
            loss = model(torch.randn(16, 32)).square().mean()
            optimizer.zero_grad()
            loss.backward()
            for parameter in model.parameters():
                assert parameter.grad is not None
                dist.all_reduce(parameter.grad)
                parameter.grad /= world
            optimizer.step()
            prof.step()
    done = handler.wait()
    dist.destroy_process_group()
    if done is None:
        print(f"rank {rank}: upload failed: {handler.error}", file=sys.stderr)
        return 1
    print(f"{done.traceset_id} {done.status}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
