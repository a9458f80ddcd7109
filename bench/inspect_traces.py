"""Trace inspection time against trace size: 256 ranks of 1 MiB, then of 256 MiB each.

Each rank's file is a PyTorch profiler (Kineto) JSON trace written as PyTorch writes it
(``tests/inspection/kineto_writer.py``), in two layouts: ``distributedInfo`` in the
header (torch.profiler) and in the tail (Kineto on-demand). The 1 MiB files are whole
traces. The 256 MiB files are sparse, to spare the disk (256 of them would be 64 GiB):
their first and last MiB are real trace bytes, the middle is a hole that reads as zeros.
Inspection never reads the middle, which is the point; reading it would find no JSON.

Each round times ``inspect_file`` over every file (``FileSource``, one file after the
other, one thread) and then ``summarize``, and checks the result: every rank found once,
one world size, no warnings. Rounds alternate small and big; the script prints the
median of each and the ratio big / small (target: under 2). The files are fresh in the
page cache, so the figures are of the inspection, not of the disk.

Then a single gzip trace with its ``distributedInfo`` at the end, the worst case, which
must be decompressed whole: 1 MiB against 1 GiB of gzip (``--quick``: 64 MiB), with the
peak of Python's allocations (tracemalloc) during each inspection.

    .venv/bin/python bench/inspect_traces.py [--quick] [--rounds N]

``--job``: instead, a 4,096-rank job's folder inspected by ``tracesets inspect`` and by
the service, with the code before (commit 6f80116) and with today's, same run
(``bench/inspect_job.py`` says how).

    .venv/bin/python bench/inspect_traces.py --job [--s3] [--rounds N] [--ranks N] [--base REV]
"""

from __future__ import annotations

import argparse
import gc
import shutil
import statistics
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Final

# The trace writer lives with the tests, which run it too; the bench uses the same one.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from inspect_job import BASE, job_figures

from tests.inspection.kineto_writer import kineto_trace, write_big_gzip
from tracesets.inspection import FileSource, inspect_file, summarize

MIB: Final = 1 << 20
REAL_BYTES: Final = MIB  # at each end of a sparse file


def write_rank_files(root: Path, ranks: int, size: int, layout: str) -> list[Path]:
    """One trace per rank of ``size`` bytes; past 2 MiB, real at both ends, sparse between.

    One trace is generated, and each rank's copy differs in its ``distributedInfo.rank``
    only: generating 256 of them would take minutes and measure nothing more.
    """
    root.mkdir(parents=True)
    template = kineto_trace(0, ranks, layout=layout, size=min(size, 2 * REAL_BYTES))
    paths = []
    for rank in range(ranks):
        path = root / f"rank{rank:04d}.json"
        trace = template.replace(b'"rank": 0,', f'"rank": {rank},'.encode(), 1)
        if size <= 2 * REAL_BYTES:
            path.write_bytes(trace)
        else:
            with path.open("wb") as out:
                out.write(trace[:REAL_BYTES])
                out.seek(size - (len(trace) - REAL_BYTES))
                out.write(trace[REAL_BYTES:])
            assert path.stat().st_size == size
        paths.append(path)
    return paths


def inspect_all(paths: list[Path], ranks: int) -> float:
    """Seconds to inspect every file and summarize; fails loudly on a wrong answer."""
    started = time.perf_counter()
    findings = [finding for path in paths for finding in inspect_file(path.name, FileSource(path))]
    summary = summarize(findings, declared_rank_count=ranks)
    elapsed = time.perf_counter() - started
    assert summary.ranks_found == list(range(ranks)), summary.ranks_found[:10]
    assert summary.world_sizes == [ranks] and not summary.warnings, summary.warnings[:3]
    return elapsed


def rank_files_figures(root: Path, ranks: int, big: int, rounds: int) -> None:
    print(f"{ranks} rank files each; {rounds} alternating rounds; median seconds")
    print(f"{'layout':8} {'1 MiB':>10} {f'{big // MIB} MiB':>10} {'ratio':>7} {'per file':>10}")
    for layout in ("header", "tail"):
        small_paths = write_rank_files(root / f"{layout}-small", ranks, MIB, layout)
        big_paths = write_rank_files(root / f"{layout}-big", ranks, big, layout)
        small: list[float] = []
        large: list[float] = []
        inspect_all(small_paths, ranks)  # warm-up: imports, first allocations
        for _ in range(rounds):
            small.append(inspect_all(small_paths, ranks))
            large.append(inspect_all(big_paths, ranks))
        s, b = statistics.median(small), statistics.median(large)
        per_file = f"{b / ranks * 1e6:,.0f} µs"
        print(f"{layout:8} {s:10.4f} {b:10.4f} {b / s:7.2f} {per_file:>10}")
        shutil.rmtree(root / f"{layout}-small")
        shutil.rmtree(root / f"{layout}-big")


def measure_one(path: Path) -> tuple[float, int]:
    gc.collect()
    tracemalloc.start()
    started = time.perf_counter()
    (finding,) = inspect_file(path.name, FileSource(path))
    elapsed = time.perf_counter() - started
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert (finding.rank, finding.rank_source) == (3, "tail"), finding
    return elapsed, peak


def gzip_figures(root: Path, big: int) -> None:
    print("\none gzip trace, distributedInfo at its end (decompressed whole, in steps)")
    print(f"{'gzip':>12} {'decompressed':>14} {'seconds':>8} {'peak MiB':>9} {'inflated at':>12}")
    for size in (MIB, big):
        path = root / f"rank3-{size}.json.gz"
        decompressed = write_big_gzip(path, 3, 8, compressed_size=size)
        elapsed, peak = measure_one(path)
        stored = path.stat().st_size
        speed = f"{decompressed / elapsed / 1e6:,.0f} MB/s"
        print(
            f"{stored / MIB:8.1f} MiB {decompressed / MIB:10,.0f} MiB {elapsed:8.2f} "
            f"{peak / MIB:9.2f} {speed:>12}"
        )
        path.unlink()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="64 files, 1 vs 64 MiB; 64 MiB gzip")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--job", action="store_true", help="a job's folder: before and now")
    parser.add_argument("--ranks", type=int, default=4096, help="the job's ranks (--job)")
    parser.add_argument("--base", default=BASE, help="the code before (--job): a git revision")
    parser.add_argument("--s3", action="store_true", help="--job: the service, reading from S3")
    args = parser.parse_args()
    if args.job:
        with tempfile.TemporaryDirectory(prefix="inspect-job-") as folder:
            job_figures(
                Path(folder), ranks=args.ranks, rounds=args.rounds, base=args.base, s3=args.s3
            )
        return
    ranks, big, big_gzip = (64, 64 * MIB, 64 * MIB) if args.quick else (256, 256 * MIB, 1024 * MIB)
    with tempfile.TemporaryDirectory(prefix="inspect-bench-") as folder:
        root = Path(folder)
        rank_files_figures(root, ranks, big, args.rounds)
        gzip_figures(root, big_gzip)


if __name__ == "__main__":
    main()
