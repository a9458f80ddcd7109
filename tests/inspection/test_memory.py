"""Memory stays bounded whatever the trace's size: 1 MiB and 64 MiB of gzip, tail layout.

The tail layout is the worst case: ``distributedInfo`` is at the end of the gzip stream,
so all of it is decompressed, in small steps, keeping only the last few MiB.
"""

from __future__ import annotations

import gc
import tracemalloc
from pathlib import Path

from tests.inspection.kineto_writer import write_big_gzip
from tracesets.inspection import FileFinding, FileSource, inspect_file
from tracesets.inspection.jsonscan import TAIL_WINDOW

MIB = 1 << 20


def peak_while_inspecting(path: Path) -> tuple[FileFinding, int]:
    gc.collect()
    tracemalloc.start()
    try:
        (finding,) = inspect_file(path.name, FileSource(path))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return finding, peak


def test_a_64_mib_gzip_trace_takes_no_more_memory_than_a_1_mib_one(tmp_path: Path) -> None:
    small, big = tmp_path / "rank3.json.gz", tmp_path / "rank5.json.gz"
    assert write_big_gzip(small, 3, 8, compressed_size=MIB) > TAIL_WINDOW  # fills the window
    assert write_big_gzip(big, 5, 8, compressed_size=64 * MIB) > 500 * MIB
    assert big.stat().st_size >= 60 * MIB and small.stat().st_size <= 2 * MIB

    small_finding, small_peak = peak_while_inspecting(small)
    big_finding, big_peak = peak_while_inspecting(big)

    assert (small_finding.rank, small_finding.rank_source) == (3, "tail")
    assert (big_finding.rank, big_finding.world_size, big_finding.rank_source) == (5, 8, "tail")
    assert big_peak <= small_peak + MIB // 4, (small_peak, big_peak)
    assert big_peak <= 2 * TAIL_WINDOW + 2 * MIB, big_peak  # the window, joined once
