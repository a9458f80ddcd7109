"""Per-rank analysis against Holistic Trace Analysis: speed and peak memory by trace size.

Each size is one rank's PyTorch profiler trace of realistic events
(``tests/analysis/run_writer.py``: ``ProfilerStep#N``, CPU ops, launches and their
kernels, NCCL all-reduces on their own stream, host-to-device copies on a third,
``record_param_comms``), plain JSON, so MB/s are of decompressed trace. Each measurement
runs in a fresh Python process, so its peak RSS (``ru_maxrss``) is its own; its time is
CPU time (of all its threads: MB/s per core on a shared machine), from after the imports
to the answer:

- Tracesets: ``analyze_file`` (steps, GPU time, overlap, collectives);
- HTA: ``TraceAnalysis(trace_dir=...)`` then ``get_temporal_breakdown()``, the same
  figures. While it runs, the parent samples its RSS and CPU time from ``/proc``; past
  ``--hta-limit-gib`` of RSS or ``--hta-cpu-limit`` seconds it is stopped, and the last
  sample says where;
- the JSON streaming candidates alone, counting events: the event scanner Tracesets uses
  (``tracesets.analysis.events``), ijson's C backend (``items(f, "traceEvents.item")``),
  the standard library's ``JSONDecoder.raw_decode`` event by event, and orjson on the
  whole document (a reference: it holds the document).

- against inflating (``inflate``): the analysis of the trace gzipped against ``gzip -dc``
  of the same file, alternating, CPU time of each, MB/s of the trace inflated, and the
  ratio of the speeds (the target: at least 0.5).

The median of ``--runs`` runs is printed for each (``--big-runs`` for sizes of 1 GiB and
more, ``--hta-runs`` / ``--hta-big-runs`` for HTA). ``--results FILE`` writes every run;
``--reuse FILE`` takes the runs of a previous results file whose trace has the same
sha256 instead of running them again (HTA takes hours on the largest size).

    .venv/bin/python bench/analyze_traces.py [--sizes 1,256,2048] [--keep DIR]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import shutil
import signal
import statistics
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
GIB: Final = 1 << 30
RUN: Final = Run(tp=8, dp=4, kernels_per_step=48, seed=7)
CANDIDATES: Final = ("scanner", "ijson", "raw_decode", "orjson")
TICK: Final = float(os.sysconf("SC_CLK_TCK"))
#: HTA is stopped before the machine has less than this left (it is shared).
RESERVE: Final = 2 * GIB


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


def measured(started: float, cpu: float, before: int, **extra: Any) -> dict[str, Any]:
    return {
        "seconds": time.perf_counter() - started,
        "cpu": cpu_seconds() - cpu,
        "rss": peak_rss(),
        "rss_before": before,
        **extra,
    }


def child_ours(path: Path) -> dict[str, Any]:
    from tracesets.analysis import analyze_file
    from tracesets.inspection import FileSource

    before, cpu, started = peak_rss(), cpu_seconds(), time.perf_counter()
    (trace,) = analyze_file(path.name, FileSource(path))
    gpu = trace.analysis.gpu
    assert gpu is not None and trace.analysis.problem is None, trace.analysis.problem
    return measured(
        started,
        cpu,
        before,
        figures=[gpu.idle_pct, gpu.compute_pct, gpu.non_compute_pct],
        kernels=gpu.kernels,
        events=trace.analysis.events,
    )


def child_hta(directory: Path) -> dict[str, Any]:
    import logging

    from hta.trace_analysis import TraceAnalysis

    logging.getLogger("hta").setLevel(logging.ERROR)
    before, cpu, started = peak_rss(), cpu_seconds(), time.perf_counter()
    analysis = TraceAnalysis(trace_dir=str(directory))
    row = analysis.get_temporal_breakdown(visualize=False).to_dict("records")[0]
    return measured(
        started,
        cpu,
        before,
        figures=[row["idle_time_pctg"], row["compute_time_pctg"], row["non_compute_time_pctg"]],
    )


def _raw_decode_events(path: Path) -> int:
    """The standard library's decoder, one event at a time from a sliding text buffer."""
    import codecs

    decoder, text = json.JSONDecoder(), codecs.getincrementaldecoder("utf-8")()
    count, at, buffer = 0, -1, ""
    with path.open("rb") as stream:
        while at < 0:  # find the array
            buffer += text.decode(stream.read(1 << 16))
            found = buffer.find('"traceEvents"')
            if found >= 0:
                at = buffer.index("[", found) + 1
        ended = False
        while not ended:
            more = stream.read(1 << 18)
            buffer = buffer[at:] + text.decode(more, final=not more)
            at = 0
            while True:
                while at < len(buffer) and buffer[at] in " \t\r\n,":
                    at += 1
                if at < len(buffer) and buffer[at] == "]":
                    ended = True
                    break
                try:
                    _, end = decoder.raw_decode(buffer, at)
                except json.JSONDecodeError:
                    if not more:
                        raise
                    break
                if end == len(buffer) and more:
                    break  # a number may go on in the next block
                count, at = count + 1, end
    return count


def child_candidate(path: Path, how: str) -> dict[str, Any]:
    import ijson
    import orjson

    from tracesets.analysis.events import scan_events

    before, cpu, started = peak_rss(), cpu_seconds(), time.perf_counter()
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
    elif how == "raw_decode":
        count = _raw_decode_events(path)
    else:
        count = len(orjson.loads(path.read_bytes())["traceEvents"])
    assert count > 0
    return measured(started, cpu, before, events=count)


def _proc_sample(pid: int) -> tuple[int, float] | None:
    """RSS (bytes) and CPU seconds of a running process, from /proc."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    rss = [int(x.split()[1]) * 1024 for x in status.splitlines() if x.startswith("VmRSS:")]
    if not rss:  # exited, not yet reaped
        return None
    return rss[0], (int(fields[11]) + int(fields[12])) / TICK


def available() -> int:
    """MemAvailable of the machine, in bytes."""
    for row in Path("/proc/meminfo").read_text().splitlines():
        if row.startswith("MemAvailable:"):
            return int(row.split()[1]) * 1024
    return 1 << 62


def in_child(
    kind: str,
    target: Path,
    *,
    rss_limit: int | None = None,
    cpu_limit: float | None = None,
    wall_limit: float | None = None,
) -> dict[str, Any]:
    """One measurement in a fresh process, watched; what stopped it if it did not finish."""
    command = [sys.executable, __file__, "--child", kind, str(target)]
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        child = subprocess.Popen(command, stdout=out, stderr=err, cwd=ROOT, text=True)
        peak, cpu, stopped = 0, 0.0, None
        started = time.perf_counter()
        while child.poll() is None:
            sample = _proc_sample(child.pid)
            if sample is not None:
                peak, cpu = max(peak, sample[0]), sample[1]
                if rss_limit is not None and sample[0] > rss_limit:
                    stopped = f"stopped at {sample[0] / GIB:.1f} GiB of RSS (the limit)"
                elif rss_limit is not None and available() < RESERVE:
                    stopped = (
                        f"stopped at {sample[0] / GIB:.1f} GiB of RSS: the machine had less "
                        f"than {RESERVE / GIB:.1f} GiB left for its other work"
                    )
                elif cpu_limit is not None and cpu > cpu_limit:
                    stopped = f"stopped after {cpu:.0f} s of CPU (the limit)"
                elif wall_limit is not None and time.perf_counter() - started > wall_limit:
                    stopped = f"stopped after {wall_limit:.0f} s of wall time (the limit)"
                if stopped:
                    child.send_signal(signal.SIGKILL)
                    child.wait()
                    break
            time.sleep(0.2)
        out.seek(0)
        err.seek(0)
        lines = out.read().strip().splitlines()
        if child.returncode == 0 and lines:
            result: dict[str, Any] = json.loads(lines[-1])
            result["sampled_rss"] = peak
            return result
        why = stopped or f"exit {child.returncode}: {err.read().strip().splitlines()[-1:]}"
        return {
            "failed": why,
            "cpu": cpu,
            "seconds": time.perf_counter() - started,
            "rss": peak,
            "sampled_rss": peak,
        }


def median_of(runs: list[dict[str, Any]]) -> dict[str, Any]:
    done = [r for r in runs if "failed" not in r]
    if not done:
        return runs[-1]
    middle = dict(done[0])
    for key in ("cpu", "seconds", "rss"):
        middle[key] = statistics.median(r[key] for r in done)
    middle["runs"] = len(done)
    middle["cpu_range"] = [min(r["cpu"] for r in done), max(r["cpu"] for r in done)]
    middle["rss_range"] = [min(r["rss"] for r in done), max(r["rss"] for r in done)]
    return middle


def line(label: str, size: int, result: dict[str, Any]) -> str:
    if "failed" in result:
        return (
            f"  {label:<10} did not finish: {result['failed']}; at that point "
            f"{result['cpu']:.0f} s CPU ({result['seconds']:.0f} s wall), "
            f"RSS {result['rss'] / MIB:,.0f} MiB"
        )
    rate = size / 1e6 / result["cpu"]
    low, high = result.get("cpu_range", [result["cpu"]] * 2)
    return (
        f"  {label:<10} {result['cpu']:8.2f} s CPU ({low:.2f}-{high:.2f}, "
        f"{result.get('runs', 1)} runs; wall {result['seconds']:.2f} s) "
        f"{rate:8.1f} MB/s per core   peak RSS {result['rss'] / MIB:8.1f} MiB "
        f"(at start {result['rss_before'] / MIB:5.1f})"
        + (f"   idle/compute/non-compute % {result['figures']}" if "figures" in result else "")
    )


def digest(path: Path) -> str:
    sha = hashlib.sha256()
    with path.open("rb") as stream:
        while block := stream.read(1 << 22):
            sha.update(block)
    return sha.hexdigest()


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1,256,2048", help="MiB per rank, comma separated")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--big-runs", type=int, default=3, help="runs at 1 GiB and more")
    parser.add_argument("--hta-runs", type=int, default=5)
    parser.add_argument("--hta-big-runs", type=int, default=1, help="HTA runs at 256 MiB+")
    parser.add_argument("--only", choices=("ours", "hta", "candidates", "inflate"), action="append")
    parser.add_argument("--no-hta", action="store_true")
    parser.add_argument("--hta-limit-gib", type=float, default=16.0)
    parser.add_argument("--hta-cpu-limit", type=float, default=4 * 3600.0)
    parser.add_argument("--hta-wall-limit", type=float, default=8 * 3600.0)
    parser.add_argument("--candidate-runs", type=int, default=5)
    parser.add_argument("--candidates-mib", type=int, default=256)
    parser.add_argument("--keep", type=Path, help="write (and keep) the traces here")
    parser.add_argument("--results", type=Path, help="write every run here (JSON)")
    parser.add_argument(
        "--reuse", type=Path, action="append", help="runs of an earlier --results file"
    )
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    return parser.parse_args()


class Bench:
    """Measurements by kind and trace, each run recorded (and reused if asked)."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.reuse: list[dict[str, Any]] = [
            run for path in args.reuse or () for run in json.loads(path.read_text())
        ]
        self.recorded: list[dict[str, Any]] = []

    def measure(self, kind: str, mib: int, sha: str, target: Path, count: int) -> dict[str, Any]:
        args = self.args
        earlier = [r for r in self.reuse if r["kind"] == kind and r["sha256"] == sha]
        if earlier:
            print(f"  ({kind}: {len(earlier)} runs recorded earlier)", flush=True)
            runs = [r["result"] for r in earlier]
        else:
            limits: dict[str, Any] = {}
            if kind == "hta":
                limits = {"rss_limit": int(args.hta_limit_gib * GIB)}
                limits["cpu_limit"] = args.hta_cpu_limit
                limits["wall_limit"] = args.hta_wall_limit
            runs = []
            for _ in range(count):
                runs.append(in_child(kind, target, **limits))
                if "failed" in runs[-1]:
                    break
        self.recorded.extend(
            {"kind": kind, "mib": mib, "sha256": sha, "result": r, "when": time.time()}
            for r in runs
        )
        if args.results:
            args.results.write_text(json.dumps(self.recorded, indent=1))
        return median_of(runs)

    def size(self, mib: int, directory: Path, only: set[str]) -> None:
        args = self.args
        path = directory / "rank-3.json"
        if not path.exists():
            write_rank(path, RUN, 3, size=mib * MIB)
        size, sha = path.stat().st_size, digest(path)
        runs = args.big_runs if mib >= 1024 else args.runs
        print(f"one rank of {size / MIB:,.1f} MiB ({size / 1e6:,.0f} MB)", flush=True)
        ours = hta = None
        if "ours" in only:
            ours = self.measure("ours", mib, sha, path, runs)
            print(line("tracesets", size, ours), flush=True)
        if "hta" in only:
            count = args.hta_big_runs if mib >= 256 else args.hta_runs
            hta = self.measure("hta", mib, sha, directory, count)
            print(line("hta", size, hta), flush=True)
        if ours and hta and "failed" not in ours:
            verb = "took" if "failed" not in hta else "stopped at"
            print(
                f"  HTA {verb} {hta['cpu'] / ours['cpu']:.1f}x Tracesets' CPU time and "
                f"{hta['rss'] / ours['rss']:.1f}x its peak RSS",
                flush=True,
            )
        if "inflate" in only:
            self.against_inflate(path, size, runs)
        if "candidates" in only and mib == args.candidates_mib:
            print(f"JSON streaming candidates on {size / MIB:,.1f} MiB", flush=True)
            for how in CANDIDATES:
                result = self.measure(how, mib, sha, path, args.candidate_runs)
                print(line(how, size, result), flush=True)

    def against_inflate(self, path: Path, size: int, runs: int) -> None:
        """The analysis of the gzipped trace against ``gzip -dc`` of the same file, in CPU
        time, alternating: the target is at least half of the inflate speed."""
        packed = path.with_suffix(".json.gz")
        if not packed.exists():
            with packed.open("wb") as out:
                subprocess.run(["gzip", "-6", "-c", str(path)], stdout=out, check=True)
        inflate, ours = [], []
        for _ in range(runs):
            before = cpu_seconds()
            subprocess.run(["gzip", "-dc", str(packed)], stdout=subprocess.DEVNULL, check=True)
            inflate.append(cpu_seconds() - before)
            ours.append(in_child("ours", packed)["cpu"])
        ratios = sorted(i / o for i, o in zip(inflate, ours, strict=True))

        def speeds(times: list[float]) -> str:
            mbs = sorted(size / 1e6 / t for t in times)
            return f"{statistics.median(mbs):,.0f} MB/s ({mbs[0]:,.0f}-{mbs[-1]:,.0f})"

        print(f"  gzip -dc      {speeds(inflate)}", flush=True)
        print(f"  analysis (gz) {speeds(ours)}", flush=True)
        print(
            f"  analysis / inflate speed: {statistics.median(ratios):.2f} "
            f"({ratios[0]:.2f}-{ratios[-1]:.2f}, {runs} alternating pairs; target 0.50)",
            flush=True,
        )


def main() -> None:
    args = arguments()
    if args.child:
        kind, target = args.child[0], Path(args.child[1])
        runners = {"ours": child_ours, "hta": child_hta}
        result = runners[kind](target) if kind in runners else child_candidate(target, kind)
        print(json.dumps(result))
        return
    only = set(args.only or ("ours", "hta", "candidates", "inflate")) - (
        {"hta"} if args.no_hta else set()
    )
    root = args.keep or Path(tempfile.mkdtemp(prefix="analyze-traces-"))
    print(f"load average {os.getloadavg()}, {os.cpu_count()} CPUs", flush=True)
    bench = Bench(args)
    try:
        for mib in (int(s) for s in args.sizes.split(",")):
            directory = root / f"{mib}mib"
            directory.mkdir(parents=True, exist_ok=True)
            bench.size(mib, directory, only)
    finally:
        if args.keep is None:
            shutil.rmtree(root)


if __name__ == "__main__":
    main()
