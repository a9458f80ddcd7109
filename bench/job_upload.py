"""``tracesets upload DIR --dp 512 --tp 8`` of a 4,096-rank job against ``curl --parallel``.

The folder is a training job as its ranks leave it: one gzip Kineto trace per rank (about
34 KB each), made from a real trace in ``tests/data/traces`` (``sampled_rank-0``: its
header and first events), each with its own rank and the world size 4,096 in its
``distributedInfo`` and its rank in its name. As in a real job, ranks 17 and 3,001 left
no trace and rank 42 left two: 4,095 files. The service (``tracesets serve``, one
uvicorn worker, the embedded defaults: SQLite and local files) runs on loopback. Each run,
alternating:

- ``tracesets upload DIR --dp 512 --tp 8``, timed from start to exit: Python start-up,
  reading every trace's header (the rank check), hashing, upload-url, 8 PUTs at a time,
  complete;
- curl: upload URLs requested (with each file's sha256) and complete called outside the
  timing; timed are the 4,095 PUTs, sent by one ``curl --parallel --parallel-max 8``
  process, the same parallelism as the command's.

Both send the same bytes to the same service, which checks each file's sha256 before it
answers. Between runs the traceset is deleted. The ratio is the command's median time
over curl's (target: under 1.5), printed with every run and the spread.

    .venv/bin/python bench/job_upload.py [--ranks N] [--runs N]
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import shutil
import statistics
import struct
import subprocess
import tempfile
import time
import zlib
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any, Final

from cli_upload import Service
from servers import VENV_BIN, debian_command, free_port, running, service_argv

TOKEN: Final = "bench-token-" + "2" * 24
PARALLEL: Final = 8
DP, TP = 512, 8
SOURCE: Final = Path(__file__).resolve().parents[1] / "tests/data/traces/sampled_rank-0.json.gz"
#: The gzip size of one rank's trace, as the job this bench stands for left them.
TRACE_BYTES: Final = 34_000
MISSING: Final = (17, 3_001)
TWICE: Final = 42


def trace_template() -> tuple[bytes, bytes]:
    """The real trace's header and as many of its first events as make about 34 KB of
    gzip, split where the rank goes."""
    trace: dict[str, Any] = json.loads(gzip.decompress(SOURCE.read_bytes()))
    events = trace["traceEvents"]
    keep = 1
    while keep < len(events):
        body = {**trace, "traceEvents": events[:keep]}
        if len(gzip.compress(json.dumps(body).encode(), compresslevel=6)) >= TRACE_BYTES:
            break
        keep = int(keep * 1.1) + 1
    trace["traceEvents"] = events[:keep]
    trace["distributedInfo"] = {**trace["distributedInfo"], "rank": -1, "world_size": DP * TP}
    text = json.dumps(trace).encode()
    before, after = text.split(b'"rank": -1', 1)
    return before + b'"rank": ', after


def gzip_members(before: bytes, after: bytes) -> Callable[[int], bytes]:
    """A maker of each rank's gzip file: the bytes after the rank are compressed once,
    as a deflate stream of their own, and each rank compresses only the bytes up to its
    rank number (4,095 whole compressions would take minutes on a busy machine)."""
    tail = zlib.compressobj(6, zlib.DEFLATED, -15)
    tail_deflate = tail.compress(after) + tail.flush()
    header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"  # gzip, no name, mtime 0

    def make(rank: int) -> bytes:
        head = before + str(rank).encode()
        start = zlib.compressobj(6, zlib.DEFLATED, -15)
        # A full flush ends the head's blocks on a byte, not final: the tail's follow.
        deflated = start.compress(head) + start.flush(zlib.Z_FULL_FLUSH)
        crc = zlib.crc32(after, zlib.crc32(head))
        size = (len(head) + len(after)) & 0xFFFFFFFF
        return header + deflated + tail_deflate + struct.pack("<II", crc, size)

    return make


def make_job(root: Path, ranks: int) -> dict[str, str]:
    """One gzip trace per rank under ``root``, as described above; sha256 by name."""
    root.mkdir(parents=True)
    make = gzip_members(*trace_template())
    names: list[tuple[int, str]] = [
        (rank, f"rank-{rank:05d}.pt.trace.json.gz") for rank in range(ranks) if rank not in MISSING
    ]
    names.append((TWICE, f"rank-{TWICE:05d}-restarted.pt.trace.json.gz"))
    digests = {}
    for rank, name in names:
        data = make(rank)
        (root / name).write_bytes(data)
        digests[name] = hashlib.sha256(data).hexdigest()
    return digests


def run_command(service: Service, directory: Path, files: int) -> float:
    """Seconds ``tracesets upload DIR --dp 512 --tp 8`` took, start to exit."""
    env = {**os.environ, "TRACESETS_URL": service.base, "TRACESETS_TOKEN": TOKEN}
    argv = [str(VENV_BIN / "tracesets"), "upload", str(directory), "--dp", str(DP)]
    argv += ["--tp", str(TP), "--json"]
    started = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=3600, check=False)
    took = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"tracesets upload exited {done.returncode}: {done.stderr[-2000:]}")
    traceset = json.loads(done.stdout)
    if traceset["status"] != "ready" or traceset["fileCount"] != files:
        raise RuntimeError(f"tracesets upload answered {traceset['status']}")
    service.call("DELETE", f"/{traceset['id']}")
    return took


def run_curl(curl: str, service: Service, directory: Path, digests: dict[str, str]) -> float:
    """Seconds one parallel curl took to PUT every file to its signed URL."""
    files = [
        {"name": name, "size": (directory / name).stat().st_size, "role": "primary", "sha256": sha}
        for name, sha in digests.items()
    ]
    metadata = {"shape": {"rankCount": DP * TP}, "parallelism": {"dp": DP, "tp": TP}}
    created = service.call(
        "POST", "/upload-url", {"name": "curl", "files": files, "workloadMetadata": metadata}
    )
    config = directory.parent / "curl.config"
    with config.open("w") as out:
        for target in created["uploads"]:
            out.write(f'upload-file = "{directory / target["name"]}"\n')
            out.write(f'url = "{target["url"]}"\noutput = "/dev/null"\n')
    argv = [curl, "-sS", "--fail", "--parallel", "--parallel-max", str(PARALLEL), "-H", "Expect:"]
    argv += ["-K", str(config)]
    started = time.perf_counter()
    subprocess.run(argv, check=True, timeout=3600, capture_output=True)
    took = time.perf_counter() - started
    if service.call("POST", f"/{created['tracesetId']}/complete")["status"] != "ready":
        raise RuntimeError("the service did not complete curl's traceset")
    service.call("DELETE", f"/{created['tracesetId']}")
    return took


def spread(times: list[float]) -> str:
    return f"min {min(times):.2f}, max {max(times):.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description="tracesets upload of a job vs curl PUTs")
    parser.add_argument("--ranks", type=int, default=DP * TP, help="ranks of the job")
    parser.add_argument("--runs", type=int, default=5, help="runs of each (median is kept)")
    parser.add_argument("--tmp-dir", type=Path, help="where the files and the service's data go")
    args = parser.parse_args()
    curl = shutil.which("curl") or debian_command("curl", "curl")
    if curl is None:
        raise SystemExit("curl is needed")

    with (
        tempfile.TemporaryDirectory(prefix="tracesets-bench-", dir=args.tmp_dir) as tmp,
        ExitStack() as stack,
    ):
        workdir = Path(tmp)
        directory = workdir / "job"
        digests = make_job(directory, args.ranks)
        total = sum((directory / name).stat().st_size for name in digests)
        print(
            f"job-upload: {len(digests):,} gzip traces, {total / 1e6:,.1f} MB in {directory}",
            flush=True,
        )
        port = free_port()
        service = Service(port)
        stack.enter_context(
            running(
                service_argv(port, workdir / "service"),
                ready_url=f"{service.base}/healthz",
                log=workdir / "service.log",
                env={"TRACESETS_BOOTSTRAP_TOKEN": TOKEN},
            )
        )
        seconds: dict[str, list[float]] = {"tracesets": [], "curl": []}
        for run in range(1, args.runs + 1):
            for name, times in seconds.items():
                took = (
                    run_command(service, directory, len(digests))
                    if name == "tracesets"
                    else run_curl(curl, service, directory, digests)
                )
                times.append(took)
                print(f"  run {run}  {name:<9}  {took:7.2f} s", flush=True)

    command = statistics.median(seconds["tracesets"])
    baseline = statistics.median(seconds["curl"])
    print(
        f"tracesets upload  {command:7.2f} s median ({spread(seconds['tracesets'])}; start-up, "
        "every header read, sha256, upload-url, PUTs, complete)"
    )
    print(
        f"curl --parallel   {baseline:7.2f} s median ({spread(seconds['curl'])}; the PUTs only, "
        f"{PARALLEL} at a time)"
    )
    print(f"ratio tracesets/curl: {command / baseline:.2f}  (target: under 1.5)")


if __name__ == "__main__":
    main()
