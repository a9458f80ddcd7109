"""Per-rank analysis against Holistic Trace Analysis: speed and peak memory by trace size.

Each size is one rank's PyTorch profiler trace of realistic events
(``tests/analysis/run_writer.py``: steps, launches and their kernels, NCCL all-reduces,
copies, ``record_param_comms``), plain JSON, so MB/s are of decompressed trace. Each
measurement runs in a fresh Python process, so its peak RSS (``ru_maxrss``) is its own;
its time is CPU time (of all its threads: MB/s per core; the machine may be shared),
from after the imports to the answer:

- Tracesets: ``analyze_file`` (steps, GPU time, overlap, collectives);
- HTA: ``TraceAnalysis(trace_dir=...)`` then ``get_temporal_breakdown()``, the same
  figures (``--no-hta`` skips it; HTA needs several GiB for the larger sizes).

Both answers are printed side by side, to check they agree. Then the JSON streaming
candidates on the largest trace HTA read: the event scanner alone
(``tracesets.analysis.events``), ijson's C backend (``items(f, "traceEvents.item")``),
and orjson on the whole document (which holds it all: a reference, not a candidate).

    .venv/bin/python bench/analyze_traces.py [--sizes 1,256] [--no-hta] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Final

# The trace writer lives with the tests, which run it too; the bench uses the same one.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.analysis.run_writer import Run, write_rank

ROOT: Final = Path(__file__).resolve().parents[1]
MIB: Final = 1 << 20
RUN: Final = Run(tp=8, dp=4, kernels_per_step=48, seed=7)


def peak_rss() -> int:
    """The larger peak of this process and of any child it ran (HTA may use a pool)."""
    own, children = (
        resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
    )
    return max(own.ru_maxrss, children.ru_maxrss) * 1024


def cpu_seconds() -> float:
    """CPU time of this process and its children: on a shared machine, wall time says
    more about the neighbours than about the code."""
    own, children = (
        resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
    )
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def child_ours(path: Path) -> dict[str, Any]:
    from tracesets.analysis import analyze_file
    from tracesets.inspection import FileSource

    before, cpu = peak_rss(), cpu_seconds()
    started = time.perf_counter()
    (trace,) = analyze_file(path.name, FileSource(path))
    elapsed = time.perf_counter() - started
    gpu = trace.analysis.gpu
    assert gpu is not None and trace.analysis.problem is None
    return {
        "seconds": elapsed,
        "cpu": cpu_seconds() - cpu,
        "rss": peak_rss(),
        "rss_before": before,
        "figures": [gpu.idle_pct, gpu.compute_pct, gpu.non_compute_pct],
    }


def child_hta(directory: Path) -> dict[str, Any]:
    import logging

    from hta.trace_analysis import TraceAnalysis

    logging.getLogger("hta").setLevel(logging.ERROR)
    before, cpu = peak_rss(), cpu_seconds()
    started = time.perf_counter()
    analysis = TraceAnalysis(trace_dir=str(directory))
    row = analysis.get_temporal_breakdown(visualize=False).to_dict("records")[0]
    elapsed = time.perf_counter() - started
    return {
        "seconds": elapsed,
        "cpu": cpu_seconds() - cpu,
        "rss": peak_rss(),
        "rss_before": before,
        "figures": [row["idle_time_pctg"], row["compute_time_pctg"], row["non_compute_time_pctg"]],
    }


def child_scanner(path: Path, how: str) -> dict[str, Any]:
    import ijson
    import orjson

    from tracesets.analysis.events import scan_events

    before, cpu = peak_rss(), cpu_seconds()
    started = time.perf_counter()
    count = 0

    def counted(batch: list[Any]) -> None:
        nonlocal count
        count += len(batch)

    if how == "scanner":
        with path.open("rb") as stream:
            scan_events(stream, counted)
    elif how == "ijson":
        assert ijson.backend == "yajl2_c", ijson.backend
        with path.open("rb") as stream:
            for _ in ijson.items(stream, "traceEvents.item", use_float=True):
                count += 1
    else:
        count = len(orjson.loads(path.read_bytes())["traceEvents"])
    assert count > 0
    return {
        "seconds": time.perf_counter() - started,
        "cpu": cpu_seconds() - cpu,
        "rss": peak_rss(),
        "rss_before": before,
    }


def in_child(kind: str, target: Path) -> dict[str, Any] | None:
    """One measurement in a fresh process; None if it failed."""
    command = [sys.executable, __file__, "--child", kind, str(target)]
    done = subprocess.run(command, capture_output=True, text=True, check=False, cwd=ROOT)
    if done.returncode != 0:
        print(f"  {kind} failed: {done.stderr.strip().splitlines()[-1:]}", flush=True)
        return None
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def line(label: str, size: int, result: dict[str, Any] | None) -> str:
    if result is None:
        return f"  {label:<10} failed"
    rate = size / MIB / result["cpu"]
    return (
        f"  {label:<10} {result['cpu']:8.2f} s CPU ({result['seconds']:.2f} s wall) "
        f"{rate:8.1f} MiB/s of CPU   peak RSS "
        f"{result['rss'] / MIB:8.1f} MiB (at start {result['rss_before'] / MIB:6.1f})"
        + (f"   idle/compute/non-compute % {result['figures']}" if "figures" in result else "")
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1,256", help="MiB per rank, comma separated")
    parser.add_argument("--no-hta", action="store_true")
    parser.add_argument("--keep", type=Path, help="write (and keep) the traces here")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        kind, target = args.child[0], Path(args.child[1])
        runners = {"ours": child_ours, "hta": child_hta}
        result = runners[kind](target) if kind in runners else child_scanner(target, kind)
        print(json.dumps(result))
        return

    root = args.keep or Path(tempfile.mkdtemp(prefix="analyze-traces-"))
    largest_read: tuple[Path, int] | None = None
    for mib in (int(s) for s in args.sizes.split(",")):
        directory = root / f"{mib}mib"
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / "rank-3.json"
        if not path.exists():
            write_rank(path, RUN, 3, size=mib * MIB)
        size = path.stat().st_size
        print(f"one rank of {size / MIB:,.1f} MiB", flush=True)
        ours = in_child("ours", path)
        print(line("tracesets", size, ours), flush=True)
        if not args.no_hta:
            hta = in_child("hta", directory)
            print(line("hta", size, hta), flush=True)
            if ours and hta:
                print(
                    f"  tracesets is {hta['cpu'] / ours['cpu']:.1f}x as fast, with "
                    f"{ours['rss'] / hta['rss']:.3f} of HTA's peak RSS",
                    flush=True,
                )
                largest_read = (path, size)
    if largest_read is not None:
        path, size = largest_read
        print(f"JSON streaming candidates on {size / MIB:,.1f} MiB", flush=True)
        for how in ("scanner", "ijson", "orjson"):
            print(line(how, size, in_child(how, path)), flush=True)


if __name__ == "__main__":
    main()
