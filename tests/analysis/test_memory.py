"""The analysis of a trace holds one block of events at a time, not the trace.

Steps and collectives cost the same memory for any length of trace, and so do GPU
events: past a window of launches and a buffer of records, they are spilled to a
temporary file in sorted runs (``tracesets.analysis.spill``, or its compiled twin, whose
allocations tracemalloc sees too: ``native/memory.h``). With the window and buffer
made small here, a trace of 30,000 GPU events spills many runs, and its analysis must
take no more memory than that of a trace of 5,000, which fills the window and the buffer
but spills little (a trace of 1,200 fills neither: what they hold is the difference).
"""

from __future__ import annotations

import gc
import gzip
import tracemalloc
from pathlib import Path

import pytest

from tests.analysis.run_writer import Run, rank_chunks
from tests.analysis.test_compiled import needs_native
from tracesets.analysis import RankAnalysis, analyze_file, compiled, distribution, kernels, spill
from tracesets.analysis.events import BLOCK
from tracesets.inspection import FileSource

MIB = 1 << 20


def write(path: Path, run: Run, size: int) -> None:
    with gzip.open(path, "wb", compresslevel=1) as out:
        for piece in rank_chunks(run, 1, size=size):
            out.write(piece)


def peak_while_analysing(path: Path) -> tuple[RankAnalysis, int]:
    gc.collect()
    tracemalloc.start()
    try:
        (found,) = analyze_file(path.name, FileSource(path))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return found.analysis, peak


def test_a_cpu_only_trace_of_24_mib_takes_no_more_memory_than_one_of_1_mib(
    tmp_path: Path,
) -> None:
    run = Run(tp=2, dp=2, cpu_only=True)
    small, big = tmp_path / "small.json.gz", tmp_path / "big.json.gz"
    write(small, run, MIB)
    write(big, run, 24 * MIB)

    small_result, small_peak = peak_while_analysing(small)
    big_result, big_peak = peak_while_analysing(big)

    assert big_result.problem is None and big_result.gpu is None
    assert big_result.steps.count > 20 * small_result.steps.count
    assert big_peak <= small_peak + MIB, (small_peak, big_peak)
    assert big_peak <= 32 * BLOCK, big_peak  # a block, its events, and what holds them


@pytest.mark.parametrize(
    "native",
    [pytest.param(True, marks=needs_native), False],
    ids=["compiled", "reference"],
)
def test_a_gpu_trace_of_24_mib_takes_no_more_memory_than_one_of_4_mib(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, native: bool
) -> None:
    monkeypatch.setattr(compiled, "NATIVE", native)
    # Every bounded buffer made small enough to fill on the small trace: the records, the
    # launches' window, and the launch figures kept exact (24 bytes a launch, up to EXACT)
    monkeypatch.setattr(distribution, "EXACT", 2048)
    monkeypatch.setattr(spill, "BUFFER", 2048)
    monkeypatch.setattr(spill, "FAN_IN", 4)
    monkeypatch.setattr(kernels, "WINDOW", 512)
    run = Run(tp=2, dp=2)
    small, big = tmp_path / "small.json.gz", tmp_path / "big.json.gz"
    write(small, run, 4 * MIB)
    write(big, run, 24 * MIB)

    small_result, small_peak = peak_while_analysing(small)
    big_result, big_peak = peak_while_analysing(big)

    assert small_result.gpu is not None and big_result.gpu is not None
    assert big_result.problem is None
    assert small_result.gpu.kernels > 2 * spill.BUFFER  # the buffer filled, and spilled
    assert small_result.kernels is not None
    assert small_result.kernels.launches.launches > distribution.EXACT  # binned, past exact
    assert big_result.gpu.kernels > 5 * small_result.gpu.kernels
    assert big_result.gpu.kernels > 10 * 2048  # ten runs at least, merged in two rounds
    # Held whole, as before, the intervals alone took 41 bytes per GPU event: 1.1 MiB more.
    assert big_peak <= small_peak + MIB // 2, (small_peak, big_peak)
    # A block's events are built with their few used fields only: about 3 MiB in all.
    assert big_peak <= 16 * BLOCK, big_peak
