"""The compiled pass gives the reference's figures, on every path.

The loop in C over a batch of events (``native/fold.c``), ``CompiledOperators`` and
``CompiledGpuEvents`` (``tracesets.analysis.compiled``) stand for
``RankAccumulator.add_all``, ``operators.OperatorCounter``, ``kernels.GpuEvents``,
``gpu.sweep`` and the kernels' fold. Every
trace the tests hold, in the orders a trace may come in, goes through both, with the
windows and buffers tiny (launches and waiting events leave the windows, runs are
spilled and merged in rounds: the merge join) and at their defaults (the join in
memory); then any events, in any order, at any sizes, and events whose fields have
every type, missing or wrong. The figures must be the
reference's: the same counts and percentages, µs equal to the nanosecond (sums of the
same durations, added in another order).
"""

from __future__ import annotations

import dataclasses
import gzip
import io
import os
import shutil
import sysconfig
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.analysis.run_writer import Run, rank_trace
from tests.analysis.test_rank_fold import EVENT
from tests.analysis.test_streaming_exact import (
    ORDERS,
    REAL_KERNELS,
    TINY,
    TRACES,
    gpu_traces,
    kineto_order,
)
from tracesets.analysis import compiled, spill
from tracesets.analysis.compiled import CompiledGpuEvents, CompiledOperators
from tracesets.analysis.decoding import typed
from tracesets.analysis.files import analyze_stream
from tracesets.analysis.kernels import GpuEvents
from tracesets.analysis.operators import OperatorCounter
from tracesets.analysis.rank import RankAccumulator, RankAnalysis

needs_native = pytest.mark.skipif(not compiled.NATIVE, reason="the extension was not built")


def test_the_extension_is_built_where_a_compiler_is() -> None:
    compiler = (sysconfig.get_config_var("CC") or "cc").split()[0]
    assert compiled.NATIVE or shutil.which(compiler) is None
    assert (RankAccumulator().compiled_sinks is not None) == compiled.NATIVE


def analysed(events: list[Any], native: bool, sizes: dict[str, int]) -> RankAnalysis:
    """The events through the loop in C and the compiled sinks, or through the reference."""
    if native:
        ops: Any = CompiledOperators()
        fold = RankAccumulator(gpu=CompiledGpuEvents(operators=ops, **sizes), operators=ops)
        assert fold.compiled_sinks is not None
    else:
        ops = OperatorCounter()
        fold = RankAccumulator(gpu=GpuEvents(operators=ops, **sizes), operators=ops)
        assert fold.compiled_sinks is None
    fold.add_all(typed(events))
    return fold.result()


def assert_close(compiled_value: Any, reference: Any, path: str = "") -> None:
    """Equal, floats to the nanosecond (µs rounded to 3 decimals may differ by one)."""
    if dataclasses.is_dataclass(reference):
        assert type(compiled_value) is type(reference), path
        for field in dataclasses.fields(reference):
            name = f"{path}.{field.name}"
            assert_close(getattr(compiled_value, field.name), getattr(reference, field.name), name)
    elif isinstance(reference, list):
        assert len(compiled_value) == len(reference), path
        for at, (c, r) in enumerate(zip(compiled_value, reference, strict=True)):
            assert_close(c, r, f"{path}[{at}]")
    elif isinstance(reference, float) and not isinstance(compiled_value, str):
        assert compiled_value == pytest.approx(reference, abs=0.0015, nan_ok=True), path
    else:
        assert compiled_value == reference, path


def assert_same_analysis(events: list[Any], sizes: dict[str, int]) -> RankAnalysis:
    ours = analysed(events, True, sizes)
    reference = analysed(events, False, sizes)
    assert_close(ours, reference)
    return ours


@needs_native
@pytest.mark.parametrize("sizes", [TINY, {}], ids=["tiny", "default"])
@pytest.mark.parametrize("order", sorted(ORDERS))
@pytest.mark.parametrize("name", sorted(REAL_KERNELS))
def test_real_traces(name: str, order: str, sizes: dict[str, int]) -> None:
    events = orjson.loads(gzip.decompress((TRACES / name).read_bytes()))["traceEvents"]
    ours = assert_same_analysis(ORDERS[order](events), sizes)
    assert (ours.gpu.kernels if ours.gpu else 0) >= REAL_KERNELS[name]


@needs_native
@pytest.mark.parametrize("sizes", [TINY, {}], ids=["tiny", "default"])
@pytest.mark.parametrize("order", sorted(ORDERS))
@pytest.mark.parametrize(
    "run",
    [
        Run(tp=2, dp=2, steps=5, seed=1),
        Run(tp=4, dp=2, steps=3, fractional=True, seed=2),
        Run(tp=2, dp=3, steps=40, kernels_per_step=24, slow={4: 1.8}, seed=3),
    ],
    ids=["4-ranks", "ns-timestamps", "40-steps"],
)
def test_generated_traces(run: Run, order: str, sizes: dict[str, int]) -> None:
    events = orjson.loads(rank_trace(run, run.world - 1))["traceEvents"]
    ours = assert_same_analysis(ORDERS[order](events), sizes)
    assert ours.gpu is not None and ours.kernels is not None and ours.operators


@needs_native
def test_a_trace_longer_than_the_default_buffer() -> None:
    """Runs spilled at the default sizes, launches past the default window."""
    run = Run(tp=2, dp=2, steps=1200, kernels_per_step=48, seed=5)  # 74,000 GPU events
    events = kineto_order(orjson.loads(rank_trace(run, 1))["traceEvents"], buffer=30_000)
    ours = assert_same_analysis(events, {})
    assert ours.gpu is not None and ours.gpu.kernels > 70_000


@needs_native
@settings(max_examples=300, deadline=None)
@given(
    events=gpu_traces(),
    window=st.integers(1, 4),
    buffer=st.integers(1, 5),
    fan_in=st.integers(2, 4),
)
def test_any_events_in_any_order(
    events: list[dict[str, Any]], window: int, buffer: int, fan_in: int
) -> None:
    assert_same_analysis(events, {"window": window, "buffer": buffer, "fan_in": fan_in})


@needs_native
@settings(max_examples=400, deadline=None)
@given(st.lists(st.one_of(EVENT, st.integers(), st.none()), max_size=40))
def test_events_of_every_shape(events: list[Any]) -> None:
    """Fields of every type, missing or wrong, read as the reference reads them."""
    assert_same_analysis(events, {})
    assert_same_analysis(events, {"window": 1, "buffer": 2, "fan_in": 2})


@needs_native
def test_the_spill_file_is_gone_once_swept() -> None:
    """Runs were written, and no file is left open (each was unlinked when made)."""
    run = Run(tp=2, dp=2, steps=5, seed=1)
    events = typed(orjson.loads(rank_trace(run, 0))["traceEvents"])
    before = set(os.listdir("/proc/self/fd"))
    gpu = CompiledGpuEvents(window=2, buffer=8, fan_in=2)
    fold = RankAccumulator(gpu=gpu)
    fold.add_all(events)
    during = set(os.listdir("/proc/self/fd"))
    assert fold.result().gpu is not None
    assert 1 <= len(during - before) <= 3  # records, old launches, events left waiting
    assert set(os.listdir("/proc/self/fd")) <= before


@needs_native
def test_a_core_closed_refuses_more_events() -> None:
    gpu = CompiledGpuEvents()
    gpu.add_gpu("sgemm", 0.0, 5.0, -1, 7, True)
    assert gpu.time(None) is not None
    with pytest.raises(RuntimeError, match="closed"):
        gpu.add_launch(1.0, 3)
    with pytest.raises(TypeError):
        gpu.add_gpu("sgemm", 0.0)  # type: ignore[call-arg]


@needs_native
def test_ranks_swept_at_once_in_threads() -> None:
    """The sweep runs without the GIL: ranks swept at once in threads, their runs sorted
    and merged at the same moments, give each what it gives alone."""
    runs = [Run(tp=2, dp=2, steps=6, seed=seed) for seed in range(6)]
    traces = [orjson.loads(rank_trace(run, 1))["traceEvents"] for run in runs]
    sizes = {"window": 3, "buffer": 16, "fan_in": 2}
    alone = [analysed(events, True, sizes) for events in traces]
    with ThreadPoolExecutor(len(traces)) as pool:
        together = list(pool.map(lambda events: analysed(events, True, sizes), traces))
    assert together == alone


@pytest.mark.parametrize(
    "native", [pytest.param(True, marks=needs_native), False], ids=["compiled", "reference"]
)
def test_a_temporary_folder_gone_leaves_the_other_figures(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, native: bool
) -> None:
    """The spill file cannot be made: the rank keeps what was read and says it was the
    machine's fault (no "could not be read", which would blame the trace)."""
    monkeypatch.setattr(compiled, "NATIVE", native)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "gone"))
    monkeypatch.setattr(spill, "BUFFER", 8)
    run = Run(tp=2, dp=2, steps=5, seed=1)
    analysis = analyze_stream(io.BytesIO(rank_trace(run, 0)))
    assert analysis.steps.count >= 1 and analysis.gpu is None  # read before the spill
    assert analysis.problem is not None
    assert analysis.problem.startswith("the GPU figures were not computed: their temporary")
