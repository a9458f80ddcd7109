"""Traces of a non-CUDA accelerator, in the shape an MTIA device's Kineto trace has.

An MTIA trace has no CUDA kernels: the CPU submits work with ``mtia_runtime`` events
(``runFunction - job_prep_and_submit_for_execution``, a ``correlation`` each), and the
device writes ``mtia_ccp_events`` on numbered queues (``args.stream`` 101 and up): jobs
(``pe_exe``, ``job_exe``), ``merge``, ``event_wait`` and memory transfers
(``dma_request``), the transfers on their own queues overlapping the jobs of the others.
Device events without a launch (an ``event_wait`` a queue does on its own) have a stream
and no correlation. Durations vary with the seed; timestamps are in nanosecond
resolution as recent PyTorch writes them.
"""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path
from typing import Any

LAUNCH = "runFunction - job_prep_and_submit_for_execution"
JOBS = ("pe_exe", "job_exe", "merge", "fc-dtype_Float", "add-dtype_Float")
COMPUTE_QUEUES = (105, 106, 107, 108)
DMA_QUEUES = (101, 102)


def accelerator_trace(*, steps: int, jobs_per_step: int, seed: int, rank: int = 0) -> bytes:
    """One rank's trace: ``steps`` profiler steps of jobs and transfers on many queues."""
    rng = random.Random(seed)
    pid, correlation = 3100 + rank, 5000
    events: list[dict[str, Any]] = []
    start = 3_605_068_200_000.0

    def time(value: float) -> float:
        return round(value, 3)

    def launch(name: str, cpu_ts: float, ts: float, dur: float, queue: int) -> None:
        nonlocal correlation
        correlation += 1
        events.append({
            "ph": "X", "cat": "mtia_runtime", "name": LAUNCH, "pid": pid, "tid": pid,
            "ts": time(cpu_ts), "dur": time(20 + rng.random() * 300),
            "args": {"correlation": correlation},
        })  # fmt: skip
        events.append({
            "ph": "X", "cat": "mtia_ccp_events", "name": name, "pid": 17, "tid": queue,
            "ts": time(ts), "dur": time(dur),
            "args": {"stream": queue, "correlation": correlation, "seq_num": correlation},
        })  # fmt: skip

    for number in range(steps):
        cpu_t, device_t = start + 10, start + 400
        for _ in range(jobs_per_step):
            queue = rng.choice(COMPUTE_QUEUES)
            dur = 50 + rng.random() * 900
            launch(rng.choice(JOBS), cpu_t, device_t + rng.random() * 200, dur, queue)
            if rng.random() < 0.6:  # a transfer on a DMA queue, during the jobs
                transfer = 100 + rng.random() * 1500
                launch("dma_request", cpu_t + 5, device_t + rng.random() * 400, transfer,
                       rng.choice(DMA_QUEUES))  # fmt: skip
            if rng.random() < 0.3:  # a queue waiting on another, launched by none
                events.append({
                    "ph": "X", "cat": "mtia_ccp_events", "name": "event_wait", "pid": 17,
                    "tid": queue, "ts": time(device_t + dur), "dur": time(rng.random() * 300),
                    "args": {"stream": queue, "wait_on_stream": rng.choice(DMA_QUEUES)},
                })  # fmt: skip
            cpu_t += 40 + rng.random() * 60
            device_t += dur * rng.random() + rng.random() * 400
        end = max(cpu_t, device_t + 2000)
        events.insert(0, {
            "ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{number}", "pid": pid,
            "tid": pid, "ts": time(start), "dur": time(end - start), "args": {},
        })  # fmt: skip
        start = end + 100
    trace = {
        "schemaVersion": 1,
        "deviceProperties": [{"id": 17, "name": "ARTEMIS"}],
        "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": 1},
        "traceEvents": events,
        "displayTimeUnit": "ms",
    }
    return json.dumps(trace).encode()


def write_accelerator_trace(directory: Path, **shape: Any) -> Path:
    """The trace at ``directory/rank-0.json.gz``, as HTA expects it."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "rank-0.json.gz"
    path.write_bytes(gzip.compress(accelerator_trace(**shape), mtime=0))
    return path
