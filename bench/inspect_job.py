"""A training job's folder inspected: today's code against the code before it, same run.

The folder is what a 4,096-rank job leaves: 4,095 gzip PyTorch profiler (Kineto) traces
of about 34 KB, one per rank, made from a real trace in ``tests/data/traces``
(``sampled_rank-0.json.gz``: its header as PyTorch writes it, every fifth of its events,
971 of CPU operators, CUDA runtime calls and kernels in their proportions);
each rank's copy gives its rank in its header and in its name. Ranks 17 and 3,001 have
no trace, rank 42 has two. Only the header differs between ranks, so the events are
deflated once and each file is that deflate stream behind its own header's, in one gzip
member: 4,095 files in a second or two instead of a minute of compression.

The code before is ``git archive BASE src`` in a temporary folder, run by the same venv
with ``PYTHONPATH`` pointing at it. Each round, in alternating order, times:

- ``tracesets inspect DIR --json`` and ``tracesets inspect DIR`` (stdout to a file), as
  subprocesses: start-up, every file's findings and figures, the report;
- the service's inspection of the same files as a stored traceset of a local store
  (``InspectionQueue.inspect``: each file's findings and figures, then the summary and
  the checks across ranks), in a subprocess, the call alone timed.

Before the rounds, where the time goes: today's command taken apart step by step in one
process, in CPU seconds (start-up, listing, headers, decompression, the figures' pass
over every event, the summary and checks, the JSON report, the tables).

Every answer is checked to be byte for byte the same as the code before gave. Then the
median of the rounds, the spread (min-max), the CPU time (user + system) of each, and
the ratio before / now.

    .venv/bin/python bench/inspect_traces.py --job [--rounds N] [--base REV] [--ranks N]
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import io
import json
import os
import resource
import statistics
import struct
import subprocess
import sys
import tarfile
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from servers import compiled, program

ROOT: Final = Path(__file__).resolve().parents[1]
REAL_TRACE: Final = ROOT / "tests/data/traces/sampled_rank-0.json.gz"
#: The code measured as "before": the last commit before the files were shared out
#: among processes and fetched ahead.
BASE: Final = "6f80116"
#: Every this many events of the real trace are kept: about 34 KB of gzip a rank.
EVENT_STRIDE: Final = 5
MISSING: Final = (17, 3_001)
TWICE: Final = 42
SIGNING_SECRET: Final = b"bench-signing-secret-" + b"0" * 16

#: One timed run: the code's ``src`` and where its answer goes, to (wall, CPU) seconds.
Timed = Callable[[Path, Path], tuple[float, float]]


def _header(rank: int, ranks: int) -> bytes:
    return (
        '{"schemaVersion": 1, "record_shapes": 1, "distributedInfo": {"backend": "nccl", '
        f'"rank": {rank}, "world_size": {ranks}}}, "traceEvents": ['
    ).encode()


def write_job(folder: Path, ranks: int) -> list[Path]:
    """The job's traces, as described above; returns them in name order."""
    folder.mkdir(parents=True)
    events = json.loads(gzip.decompress(REAL_TRACE.read_bytes()))["traceEvents"][::EVENT_STRIDE]
    body = (", ".join(json.dumps(event) for event in events) + "]}").encode()
    deflate = zlib.compressobj(6, zlib.DEFLATED, -15)
    deflated_body = deflate.compress(body) + deflate.flush()

    def write(path: Path, rank: int) -> None:
        header = _header(rank, ranks)
        deflate = zlib.compressobj(6, zlib.DEFLATED, -15)
        deflated_header = deflate.compress(header) + deflate.flush(zlib.Z_SYNC_FLUSH)
        crc = zlib.crc32(body, zlib.crc32(header))
        trailer = struct.pack("<II", crc, (len(header) + len(body)) & 0xFFFFFFFF)
        gzip_header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"
        path.write_bytes(gzip_header + deflated_header + deflated_body + trailer)

    for rank in range(ranks):
        if rank not in MISSING:
            write(folder / f"rank-{rank}.json.gz", rank)
    write(folder / f"rank-{TWICE}-retry.json.gz", TWICE)
    paths = sorted(folder.iterdir())
    trace = json.loads(gzip.decompress(paths[0].read_bytes()))  # a whole, valid gzip JSON
    assert len(trace["traceEvents"]) == len(events), "the generated trace does not read back"
    return paths


def base_tree(rev: str, into: Path) -> Path:
    """The ``src`` folder of ``rev``, compiled, for ``PYTHONPATH``."""
    archive = subprocess.run(
        ["git", "archive", "--format=tar", rev, "src"], cwd=ROOT, capture_output=True, check=True
    ).stdout
    into.mkdir(parents=True)
    tar_path = into / "src.tar"
    tar_path.write_bytes(archive)
    with tarfile.open(tar_path) as tar:
        tar.extractall(into, filter="data")
    return compiled(into / "src")


def lay_out_store(paths: list[Path], store_root: Path) -> Path:
    """The files as a ready traceset's blobs of a local store; its manifest's path."""
    manifest = []
    for idx, path in enumerate(paths):
        data = path.read_bytes()
        sha256 = hashlib.sha256(data).hexdigest()
        blob = store_root / "blobs" / "job" / f"{idx}.{sha256}"
        blob.parent.mkdir(parents=True, exist_ok=True)
        os.link(path, blob)
        manifest.append([idx, path.name, len(data), sha256])
    (store_root / "manifest.json").write_text(json.dumps(manifest))
    return store_root / "manifest.json"


@contextlib.contextmanager
def s3_bucket(paths: list[Path], manifest: Path) -> Iterator[str]:
    """An S3 server (moto, as the scaled tests run) on a loopback port it picks, holding
    the files as a traceset's objects; yields the store's URL (``AWS_*`` set for it)."""
    import boto3

    server = subprocess.Popen(
        [sys.executable, str(ROOT / "scripts/s3_server.py")],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert server.stdout is not None
        port = int(server.stdout.readline())
        os.environ.update(
            AWS_ACCESS_KEY_ID="bench",
            AWS_SECRET_ACCESS_KEY="bench",
            AWS_DEFAULT_REGION="us-east-1",
            AWS_ENDPOINT_URL=f"http://127.0.0.1:{port}",
        )
        s3 = boto3.client("s3")
        s3.create_bucket(Bucket="bench")
        for idx, _, _, _ in json.loads(manifest.read_text()):
            s3.put_object(Bucket="bench", Key=f"traces/job/{idx}", Body=paths[idx].read_bytes())
        yield "s3://bench/traces"
    finally:
        server.terminate()
        server.wait()


def _file_by_file(queue: Any, traceset: Any) -> bytes:
    """The queue's work on a traceset without a database: its files claimed in batches as
    a process claims them (the claims and records made without one), each fetched ahead
    and read, then joined as the last file's recorder joins them."""
    from tracesets.db.inspection_files import Claim
    from tracesets.service.inspections import MAX_BATCH_FILES
    from tracesets.service.joined import join

    done: list[tuple[str, str, str]] = []
    primary = [f for f in traceset.files if f.role == "primary"]
    batches = iter(
        [
            Claim(1, f.idx, 1, traceset.id, f.name, f.size, f.sha256)
            for f in primary[start : start + MAX_BATCH_FILES]
        ]
        for start in range(0, len(primary), MAX_BATCH_FILES)
    )
    queue._claim_more = lambda: next(batches, None)
    queue._record = lambda outcomes: done.extend(
        (claim.name, status, text) for claim, status, text in outcomes
    )
    queue._inspect(next(batches))
    assert len(done) == len(primary), "a file was not read"
    return join(traceset.rank_count, None, done).result


def _pool_cpu(queue: Any) -> float:
    """CPU seconds (user + system) of the queue's pool processes and of the fork server
    that made them, from /proc, before they go: they are no children of this process."""
    from multiprocessing import forkserver

    readers = getattr(queue, "reader", None) and queue.reader._readers
    pids = list(getattr(readers, "_processes", None) or {})
    server = getattr(forkserver._forkserver, "_forkserver_pid", None)
    ticks = 0
    for pid in pids + ([server] if server else []):
        stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        ticks += int(stat[11]) + int(stat[12]) + int(stat[13]) + int(stat[14])
    return ticks / os.sysconf("SC_CLK_TCK")


def service_run(store_root: Path, result: Path, s3_url: str | None = None) -> None:
    """(In a subprocess, under either code) the service's inspection of the laid-out
    traceset, timed alone; writes its result JSON to ``result``, prints the seconds."""
    from tracesets.inspection.report import result_json
    from tracesets.records import StoredFile, Traceset
    from tracesets.service.inspections import InspectionQueue
    from tracesets.storage.base import BlobStore
    from tracesets.storage.local import LocalBlobStore
    from tracesets.storage.s3 import S3BlobStore
    from tracesets.storage.signing import URLSigner

    now = datetime.now(UTC)
    files = [
        StoredFile(idx, name, size, "primary", None, sha256, True)
        for idx, name, size, sha256 in json.loads((store_root / "manifest.json").read_text())
    ]
    traceset = Traceset(1, "job", "bench", "job", None, "ready", now, now, None, None, None, files)
    store: BlobStore = (
        LocalBlobStore(store_root, URLSigner(SIGNING_SECRET))
        if s3_url is None
        else S3BlobStore(
            s3_url,
            upload_ttl=3600,
            download_ttl=900,
            multipart_threshold=1 << 30,
            part_size=1 << 26,
        )
    )
    queue = InspectionQueue(db=None, store=store)  # type: ignore[arg-type]  # nothing to record
    started, cpu = time.perf_counter(), time.process_time()
    whole = getattr(queue, "inspect", None)  # the code from before files were claimed one by one
    if whole is not None:
        summary, findings, analysis = whole(traceset)
        result.write_bytes(result_json(summary, findings, analysis.inline()))
    else:
        result.write_bytes(_file_by_file(queue, traceset))
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    cpu += _pool_cpu(queue)
    if hasattr(queue, "reader"):
        queue.reader.close_pool()
    print(json.dumps({"seconds": elapsed, "cpu": cpu}))


def where_time_goes(folder: Path) -> None:
    """Today's ``tracesets inspect`` taken apart, one step after the other in this process
    (the figures' pass alone in one process, as before, to show its own cost)."""
    before = _children_cpu()
    imports = "from tracesets.cli.main import command_line; command_line(['inspect'])"
    subprocess.run([sys.executable, "-c", imports], check=True)
    steps = [("start-up: Python and the imports", _children_cpu() - before)]

    from rich.console import Console

    from tracesets.analysis import analyze_file
    from tracesets.analysis.collector import fewer_collections
    from tracesets.analysis.report import analyse_traceset
    from tracesets.cli.figures import figure_rows, json_members
    from tracesets.cli.inspect import print_report
    from tracesets.cli.tables import print_rows
    from tracesets.client.files import collect
    from tracesets.inspection import FileSource, inspect_file, summarize
    from tracesets.inspection.report import result_json

    def step(what: str, started: float) -> None:
        steps.append((what, time.process_time() - started))

    begun = time.process_time()
    files = collect([folder], ())
    step("listing the files", begun)
    begun = time.process_time()
    findings = [f for file in files for f in inspect_file(file.name, FileSource(file.path))]
    step("each file's header (findings)", begun)
    begun = time.process_time()
    for file in files:
        gzip.decompress(file.path.read_bytes())
    step("(decompressing every file whole)", begun)
    begun = time.process_time()
    with fewer_collections():  # as the command's processes read
        traces = [t for file in files for t in analyze_file(file.name, FileSource(file.path))]
    step("each file's figures: every event", begun)
    begun = time.process_time()
    summary = summarize(findings, declared_rank_count=None)
    analysis = analyse_traceset(findings, traces, world_size=summary.world_size)
    step("summary and the checks across ranks", begun)
    begun = time.process_time()
    report = result_json(summary, findings, json_members(analysis))
    step("--json: the report", begun)
    begun = time.process_time()
    table = io.StringIO()
    out = Console(highlight=False, width=100_000, file=table)
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        print_report(findings, summary)
        print_rows(out, figure_rows(analysis))
    step("the two tables", begun)
    assert report and table.getvalue()
    print(f"where the CPU time goes, today's code, one process ({len(files):,} files):")
    for what, seconds in steps:
        print(f"  {what:38} {seconds:7.2f} s")


@dataclass
class Figures:
    wall: list[float]
    cpu: list[float]


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_cli(pythonpath: Path, folder: Path, out: Path, *args: str) -> tuple[float, float]:
    env = {**os.environ, "PYTHONPATH": str(pythonpath)}
    argv = [*program(pythonpath), "inspect", str(folder), *args]
    cpu, started = _children_cpu(), time.perf_counter()
    with out.open("wb") as stdout:
        subprocess.run(argv, env=env, stdout=stdout, stderr=subprocess.STDOUT, check=True)
    return time.perf_counter() - started, _children_cpu() - cpu


def run_service(
    pythonpath: Path, store_root: Path, out: Path, s3_url: str | None = None
) -> tuple[float, float]:
    env = {**os.environ, "PYTHONPATH": f"{pythonpath}{os.pathsep}{ROOT / 'bench'}"}
    argv = [sys.executable, __file__, "--service-run", str(store_root), str(out)]
    argv += [s3_url] if s3_url is not None else []
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=True)
    timing: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return float(timing["seconds"]), float(timing["cpu"])


def _line(what: str, before: Figures, now: Figures) -> str:
    def median(values: list[float]) -> str:
        return f"{statistics.median(values):7.2f} ({min(values):.2f}-{max(values):.2f})"

    ratio = statistics.median(before.wall) / statistics.median(now.wall)
    cpu_ratio = statistics.median(before.cpu) / statistics.median(now.cpu)
    return (
        f"{what:26} {median(before.wall):>22} {median(now.wall):>22} {ratio:6.2f}"
        f" {statistics.median(before.cpu):8.2f} {statistics.median(now.cpu):8.2f}"
        f" {cpu_ratio:6.2f}"
    )


def job_figures(root: Path, *, ranks: int, rounds: int, base: str, s3: bool) -> None:
    paths = write_job(root / "job", ranks)
    size = sum(path.stat().st_size for path in paths)
    print(f"\n{len(paths):,} gzip traces of {ranks:,} ranks, {size / 1e6:,.0f} MB; base {base}")
    before_src = base_tree(base, root / "base")
    now_src = ROOT / "src"
    store_root = root / "store"
    manifest = lay_out_store(paths, store_root)
    with contextlib.ExitStack() as stack:
        runs: dict[str, Timed]
        if s3:  # the service alone, reading from S3
            url = stack.enter_context(s3_bucket(paths, manifest))
            runs = {
                "service inspection, S3": lambda src, out: run_service(src, store_root, out, url)
            }
        else:
            where_time_goes(root / "job")
            runs = {
                "tracesets inspect --json": lambda src, out: run_cli(
                    src, root / "job", out, "--json"
                ),
                "tracesets inspect (table)": lambda src, out: run_cli(src, root / "job", out),
                "service inspection": lambda src, out: run_service(src, store_root, out),
            }
        _rounds(root, runs, rounds, before_src, now_src)


def _rounds(
    root: Path,
    runs: dict[str, Timed],
    rounds: int,
    before_src: Path,
    now_src: Path,
) -> None:
    figures = {(what, who): Figures([], []) for what in runs for who in ("before", "now")}
    for turn in range(rounds):
        order = [("before", before_src), ("now", now_src)]
        for what, run in runs.items():
            answers = {}
            for who, src in order if turn % 2 == 0 else order[::-1]:
                out = root / f"{who}.out"
                wall, cpu = run(src, out)
                figures[what, who].wall.append(wall)
                figures[what, who].cpu.append(cpu)
                answers[who] = out.read_bytes()
            assert answers["before"] == answers["now"], f"{what}: the answers differ"
            before, now = figures[what, "before"], figures[what, "now"]
            print(
                f"  round {turn + 1}, {what}: before {before.wall[-1]:.2f} s"
                f" ({before.cpu[-1]:.2f} cpu), now {now.wall[-1]:.2f} s ({now.cpu[-1]:.2f} cpu)",
                flush=True,
            )
        print(f"  round {turn + 1} of {rounds} done: every answer the same as before", flush=True)
    print(f"seconds, median of {rounds} (min-max); cpu: user + system, median")
    print(
        f"{'':26} {'before':>22} {'now':>22} {'ratio':>6} {'cpu then':>8} {'cpu now':>8}"
        f" {'ratio':>6}"
    )
    for what in runs:
        print(_line(what, figures[what, "before"], figures[what, "now"]))


if __name__ == "__main__" and sys.argv[1:2] == ["--service-run"]:
    service_run(Path(sys.argv[2]), Path(sys.argv[3]), *sys.argv[4:5])
