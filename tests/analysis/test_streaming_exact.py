"""GPU time in bounded memory equals the plain computation that holds every event.

``ExactGpuIntervals`` (``exact_gpu.py``) keeps every interval and launch and sorts them
all at the end; ``GpuEvents`` keeps a window of launches and spills sorted runs. Here
its window and buffers are made tiny, so every path runs on every trace: launches and
waiting events falling out of the window and joined at the end, runs written, runs
merged into longer runs before the last merge. The traces are the real ones in
``tests/data``, generated runs, and both in the orders a trace may come in: as written,
as Kineto writes them (CPU events first, then the GPU buffers in the order of their
addresses, so later buffers may come first), and shuffled.
"""

from __future__ import annotations

import gzip
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.analysis.exact_gpu import ExactGpuIntervals
from tests.analysis.run_writer import Run, rank_trace
from tracesets.analysis.decoding import typed
from tracesets.analysis.gpu import GpuTime
from tracesets.analysis.kernels import GpuEvents
from tracesets.analysis.rank import RankAccumulator
from tracesets.analysis.spill import SortedRecords

TRACES = Path(__file__).resolve().parents[1] / "data" / "traces"
#: Small enough that each path runs many times on a trace of a few thousand events.
TINY = {"window": 16, "buffer": 64, "fan_in": 3}


def streamed_and_exact(
    events: list[Any], sizes: dict[str, int] = TINY
) -> tuple[GpuTime | None, GpuTime | None]:
    streamed = RankAccumulator(
        gpu=GpuEvents(
            window=sizes.get("window"), buffer=sizes.get("buffer"), fan_in=sizes.get("fan_in")
        )
    )
    streamed.add_all(typed(events))
    exact = RankAccumulator(gpu=ExactGpuIntervals())
    exact.add_all(typed(events))
    return streamed.result().gpu, exact.result().gpu


def assert_same(streamed: GpuTime | None, exact: GpuTime | None) -> None:
    """Equal figures. The µs are sums of the same intervals in another order, so they may
    differ in the last bits of a float; the rounded percentages may not differ at all."""
    if exact is None:
        assert streamed is None
        return
    assert streamed is not None
    assert streamed.kernels == exact.kernels
    for name in ("idle_pct", "compute_pct", "non_compute_pct", "overlap_pct"):
        assert getattr(streamed, name) == getattr(exact, name), name
    for name in (
        "kernel_us",
        "idle_us",
        "compute_us",
        "non_compute_us",
        "communication_us",
        "memory_us",
        "other_us",
    ):
        assert getattr(streamed, name) == pytest.approx(getattr(exact, name), abs=0.002), name


def is_gpu_side(event: dict[str, Any]) -> bool:
    """What Kineto writes from its CUPTI buffers: GPU events and the runtime calls."""
    args = event.get("args") or {}
    return "stream" in args or "correlation" in args


def kineto_order(events: list[Any], buffer: int = 200) -> list[Any]:
    """CPU events first; then GPU events and runtime calls in buffers of ``buffer``
    events, each in time order, the buffers in a scrambled (address) order."""
    cpu = [e for e in events if not is_gpu_side(e)]
    gpu = sorted((e for e in events if is_gpu_side(e)), key=lambda e: float(e["ts"]))
    buffers = [gpu[at : at + buffer] for at in range(0, len(gpu), buffer)]
    random.Random(len(events)).shuffle(buffers)
    return cpu + [e for b in buffers for e in b]


def shuffled(events: list[Any]) -> list[Any]:
    events = list(events)
    random.Random(7).shuffle(events)
    return events


def as_written(events: list[Any]) -> list[Any]:
    return events


ORDERS: dict[str, Callable[[list[Any]], list[Any]]] = {
    "as-written": as_written,
    "kineto": kineto_order,
    "shuffled": shuffled,
}


#: The real traces and the GPU events each holds (CUDA, ROCm, MTIA; one without).
REAL_KERNELS = {
    "sampled_rank-0.json.gz": 500,
    "sampled_rank-1.json.gz": 500,
    "nccl_data.json.gz": 500,
    "rank_not_found.json.gz": 0,
    "mi250_minitoy_train_ROCm6_2_kineto.json.gz": 16,
    "mtia_inference_rank_0.json.gz": 1_000,
}


@pytest.mark.parametrize("order", sorted(ORDERS))
@pytest.mark.parametrize("name", sorted(REAL_KERNELS))
def test_real_traces(name: str, order: str) -> None:
    events = orjson.loads(gzip.decompress((TRACES / name).read_bytes()))["traceEvents"]
    streamed, exact = streamed_and_exact(ORDERS[order](events))
    assert_same(streamed, exact)
    if REAL_KERNELS[name]:
        assert exact is not None and exact.kernels >= REAL_KERNELS[name]


@pytest.mark.parametrize("order", sorted(ORDERS))
@pytest.mark.parametrize(
    "run",
    [
        Run(tp=2, dp=2, steps=5, seed=1),
        Run(tp=4, dp=2, steps=3, fractional=True, seed=2),
        Run(tp=2, dp=3, steps=40, kernels_per_step=24, slow={4: 1.8}, seed=3),
        Run(tp=2, dp=2, steps=1, seed=4),  # one step: HTA's filter does not apply
    ],
    ids=["4-ranks", "ns-timestamps", "40-steps", "one-step"],
)
def test_generated_traces(run: Run, order: str) -> None:
    for rank in (0, run.world - 1):
        events = orjson.loads(rank_trace(run, rank))["traceEvents"]
        streamed, exact = streamed_and_exact(ORDERS[order](events))
        assert exact is not None
        assert_same(streamed, exact)


def test_the_default_sizes_on_a_trace_longer_than_their_buffer() -> None:
    run = Run(tp=2, dp=2, steps=1200, kernels_per_step=48, seed=5)  # 74,000 GPU events
    events = kineto_order(orjson.loads(rank_trace(run, 1))["traceEvents"], buffer=30_000)
    probe = GpuEvents()
    streamed, exact = streamed_and_exact(events, sizes={})
    assert probe.records.buffer_size < 74_000
    assert exact is not None and exact.kernels > 70_000
    assert_same(streamed, exact)


@st.composite
def gpu_traces(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Kernels of every kind on a few streams, launches (some missing, some late), steps,
    integer or fractional times, in any order."""
    fractional = draw(st.booleans())
    time = st.floats(0, 2000) if fractional else st.integers(0, 2000)
    names = ["sgemm", "ncclDevKernel_AllReduce", "Memcpy HtoD", "Memset", "Event Sync", "gelu"]
    events: list[dict[str, Any]] = []
    for correlation in range(draw(st.integers(0, 60))):
        start, length = draw(time), draw(time) / 10
        has_correlation = draw(st.integers(0, 9)) > 0
        args = {"stream": draw(st.sampled_from([7, 20, 24])), "correlation": correlation}
        if not has_correlation:
            args["correlation"] = -1
        kernel = {"cat": "kernel", "name": draw(st.sampled_from(names)), "ts": start}
        events.append({**kernel, "dur": length, "args": args})
        if has_correlation and draw(st.integers(0, 5)) > 0:
            launch = {"cat": "cuda_runtime", "name": "cudaLaunchKernel", "dur": 3}
            events.append({**launch, "ts": draw(time), "args": {"correlation": correlation}})
    for number in range(draw(st.integers(0, 3))):
        step = {"cat": "user_annotation", "name": f"ProfilerStep#{number}", "dur": 50}
        events.append({**step, "ts": draw(time)})
    return draw(st.permutations(events))


@settings(max_examples=200, deadline=None)
@given(events=gpu_traces(), window=st.integers(1, 4), buffer=st.integers(1, 5))
def test_any_events_in_any_order(events: list[dict[str, Any]], window: int, buffer: int) -> None:
    streamed, exact = streamed_and_exact(
        events, sizes={"window": window, "buffer": buffer, "fan_in": 2}
    )
    assert_same(streamed, exact)


@settings(max_examples=200, deadline=None)
@given(
    records=st.lists(st.tuples(st.floats(-1e9, 1e9), st.integers(0, 3)), max_size=300),
    buffer=st.integers(1, 20),
    fan_in=st.integers(2, 5),
)
def test_sorted_records_are_sorted(
    records: list[tuple[float, int]], buffer: int, fan_in: int
) -> None:
    spill = SortedRecords(2, buffer=buffer, fan_in=fan_in)
    for record in records:
        spill.add(record)
    assert list(spill) == sorted(records)
