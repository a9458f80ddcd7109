"""The analysis of a trace holds one block of events at a time, not the trace.

Steps and collectives cost the same memory for any length of trace; GPU events cost
their intervals (25 bytes each, bounded by ``MAX_GPU_EVENTS``) until the end of the
trace, where HTA's filter and merge need them all.
"""

from __future__ import annotations

import gc
import gzip
import tracemalloc
from pathlib import Path

from tests.analysis.run_writer import Run, rank_chunks
from tracesets.analysis import RankAnalysis, analyze_file
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


def test_gpu_events_cost_their_intervals_only(tmp_path: Path) -> None:
    path = tmp_path / "gpu.json.gz"
    write(path, Run(tp=2, dp=2), 24 * MIB)
    result, peak = peak_while_analysing(path)
    assert result.gpu is not None
    assert peak <= 32 * BLOCK + 160 * result.gpu.kernels, (peak, result.gpu.kernels)
