"""``tracesets upload`` of a directory against curl PUTs of the same bytes.

A directory of 64 files of random bytes (1 GiB in all; 128 MiB with --quick; other
counts and sizes with --files and --size-mib) and the service (``tracesets serve``, one
uvicorn worker) on loopback. Each run, alternating:

- ``tracesets upload DIR --rank-count N`` (N the files), timed from start to exit:
  Python start-up, reading and hashing every file once, upload-url, 8 PUTs at a time,
  complete;
- curl: upload URLs requested (with the sha256 of each file) and complete called
  outside the timing; timed are the PUTs, sent by one ``curl --parallel
  --parallel-max 8`` process, the same parallelism as the command's.

Both send the same bytes to the same service, which checks each file's sha256 and
fsyncs it before it answers. Between runs the traceset is deleted and the disk synced.
The ratio is curl's time over the command's: 1.0 means the command is as fast as curl.

With ``--floor``, a third contender in each run: the same curl PUTs with every file
hashed beside them (``hashlib``'s sha256, two threads, the command's own way), timed
until both are done. The command must hash every byte it declares, on the cores the
service and curl use here; curl's time over this one is the most any client that
hashes on these cores could reach, before its start-up and its requests are counted.
A fourth adds the start-up: a Python program that only imports what a client needs to
hash files and send them (``LEAST_IMPORTS``), timed start to exit.

With ``--base-src`` (an earlier commit's ``src``), that commit's command runs too, from
the same virtualenv with its ``src`` first on ``PYTHONPATH``, against the same service.

With ``--split-cores``, the service runs on one core and every contender on another, as
when the uploader and the service are two machines: the service's CPU then bounds curl,
and a contender's own work (start-up, hashing) shows only where the service waits for it.

    .venv/bin/python bench/cli_upload.py [--quick] [--runs N] [--files N] [--floor]
        [--base-src DIR] [--split-cores]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any, Final

from servers import (
    LOOPBACK,
    VENV_BIN,
    compiled,
    debian_command,
    free_port,
    running,
    service_argv,
)

TOKEN: Final = "bench-token-" + "2" * 24
FILES: Final = 64
PARALLEL: Final = 8
MB: Final = 1_000_000
CHUNK: Final = 4 * 1024 * 1024
HASHED: Final = "curl + sha256"
STARTED: Final = "python start-up"
#: The least a client in Python imports to hash files and send them over HTTP.
LEAST_IMPORTS: Final = "import concurrent.futures, hashlib, http.client, json"
BASE: Final = "base"


def make_directory(root: Path, total: int, files: int = FILES) -> dict[str, str]:
    """``files`` files of random bytes under ``root``; their sha256 by name."""
    root.mkdir(parents=True)
    size = total // files
    digests = {}
    for index in range(files):
        name = f"rank{index:03d}.trace"
        digest = hashlib.sha256()
        with (root / name).open("wb") as out:
            left = size
            while left:
                block = os.urandom(min(CHUNK, left))
                digest.update(block)
                out.write(block)
                left -= len(block)
        digests[name] = digest.hexdigest()
    os.sync()
    return digests


class Service:
    def __init__(self, port: int) -> None:
        self.base = f"http://{LOOPBACK}:{port}"

    def call(self, method: str, path: str, body: Any | None = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
        request = urllib.request.Request(
            f"{self.base}/api/v1/tracesets{path}", data=data, headers=headers, method=method
        )
        with urllib.request.urlopen(request, timeout=300) as answer:
            text = answer.read()
            return json.loads(text) if text else None


def children_cpu() -> float:
    """CPU seconds (user + sys) of this process's finished children so far."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def run_command(
    service: Service, directory: Path, cpu: list[float] | None = None, src: Path | None = None
) -> float:
    """Seconds ``tracesets upload DIR`` took, start to exit; its CPU seconds onto ``cpu``;
    with ``src``, the command of that source folder (an earlier commit's)."""
    env = {**os.environ, "TRACESETS_URL": service.base, "TRACESETS_TOKEN": TOKEN}
    if src is not None:
        env["PYTHONPATH"] = str(src)
    rank_count = len(list(directory.iterdir()))
    argv = [str(VENV_BIN / "tracesets"), "upload", str(directory), "--rank-count", str(rank_count)]
    argv.append("--json")
    cpu_before = children_cpu()
    started = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=1800, check=False)
    took = time.perf_counter() - started
    if cpu is not None:
        cpu.append(children_cpu() - cpu_before)
    if done.returncode != 0:
        raise RuntimeError(f"tracesets upload exited {done.returncode}: {done.stderr[-2000:]}")
    traceset = json.loads(done.stdout)
    if traceset["status"] != "ready" or len(traceset["files"]) != rank_count:
        raise RuntimeError(f"tracesets upload answered {traceset['status']}")
    service.call("DELETE", f"/{traceset['id']}")
    return took


def run_curl(
    curl: str,
    service: Service,
    directory: Path,
    digests: dict[str, str],
    beside: list[str] | None = None,
) -> float:
    """Seconds one parallel curl took to PUT every file to its signed URL; with
    ``beside``, that command run alongside, until both are done."""
    files = [
        {"name": name, "size": (directory / name).stat().st_size, "role": "primary", "sha256": sha}
        for name, sha in digests.items()
    ]
    created = service.call(
        "POST",
        "/upload-url",
        {"name": "curl", "files": files, "workloadMetadata": {"shape": {"rankCount": len(files)}}},
    )
    argv = [curl, "-sS", "--fail", "--parallel", "--parallel-max", str(PARALLEL), "-H", "Expect:"]
    for target in created["uploads"]:
        argv += ["-T", str(directory / target["name"]), "-o", "/dev/null", target["url"]]
    started = time.perf_counter()
    alongside = subprocess.Popen(beside, stdout=subprocess.DEVNULL) if beside else None
    subprocess.run(argv, check=True, timeout=1800, capture_output=True)
    if alongside is not None and alongside.wait(timeout=1800) != 0:
        raise RuntimeError(f"the command beside curl exited {alongside.returncode}")
    took = time.perf_counter() - started
    if service.call("POST", f"/{created['tracesetId']}/complete")["status"] != "ready":
        raise RuntimeError("the service did not complete curl's traceset")
    service.call("DELETE", f"/{created['tracesetId']}")
    return took


#: Every file named on the command line hashed with ``hashlib``'s sha256 on two threads,
#: as the command hashes ahead (``tracesets.client.files.hash_file``).
HASHER: Final = """
import hashlib, sys
from concurrent.futures import ThreadPoolExecutor
def digest(path):
    with open(path, "rb", buffering=0) as source:
        return hashlib.file_digest(source, "sha256").hexdigest()
with ThreadPoolExecutor(2) as pool:
    print(len(list(pool.map(digest, sys.argv[1:]))))
"""


def run_started(argv: list[str]) -> float:
    """Seconds ``argv`` took, start to exit."""
    started = time.perf_counter()
    subprocess.run(argv, check=True, timeout=60)
    return time.perf_counter() - started


def pinned(argv: list[str], cpu: int) -> list[str]:
    """``argv`` run on core ``cpu`` alone, every thread it starts too."""
    start = (
        "import os, sys; os.sched_setaffinity(0, {int(sys.argv[1])}); "
        "os.execv(sys.argv[2], sys.argv[2:])"
    )
    return [sys.executable, "-c", start, str(cpu), *argv]


def split_cores() -> tuple[int, int]:
    """Two of this process's cores: the service's, and the contenders'."""
    cores = sorted(os.sched_getaffinity(0))
    if len(cores) < 2:
        raise SystemExit("--split-cores needs two cores")
    return cores[0], cores[1]


def start_service(stack: ExitStack, workdir: Path, *, split: bool) -> Service:
    """The service, until ``stack`` closes; with ``split``, it on one core and this
    process (so every contender it starts) on another."""
    port = free_port()
    service = Service(port)
    argv = service_argv(port, workdir / "service")
    if split:
        service_core, contenders_core = split_cores()
        argv = pinned(argv, service_core)
        os.sched_setaffinity(0, {contenders_core})
        print(f"  the service on core {service_core}, the contenders on core {contenders_core}")
    stack.enter_context(
        running(
            argv,
            ready_url=f"{service.base}/healthz",
            log=workdir / "service.log",
            env={"TRACESETS_BOOTSTRAP_TOKEN": TOKEN},
        )
    )
    return service


def report(
    seconds: dict[str, list[float]], total: int, cpu: list[float], base_cpu: list[float]
) -> None:
    """The medians of every contender's runs, their spread, and the ratios to curl."""
    command = statistics.median(seconds["tracesets"])
    baseline = statistics.median(seconds["curl"])
    print(
        f"tracesets upload  {command:6.2f} s  {total / command / MB:8.1f} MB/s (median; start-up, "
        "sha256 of every file, upload-url, PUTs, complete)"
    )
    print(
        f"curl --parallel   {baseline:6.2f} s  {total / baseline / MB:8.1f} MB/s (median; the "
        f"PUTs only, {PARALLEL} at a time)"
    )
    print(
        f"tracesets upload CPU (user + sys) {statistics.median(cpu):.2f} s (median; "
        f"min {min(cpu):.2f}, max {max(cpu):.2f})"
    )
    for name, times in seconds.items():
        print(f"  {name} spread: min {min(times):.2f} s, max {max(times):.2f} s")
    print(f"ratio curl/tracesets: {baseline / command:.2f}  (1.0 = as fast as curl)")
    if BASE in seconds:
        before = statistics.median(seconds[BASE])
        print(
            f"the command of --base-src  {before:6.2f} s, CPU {statistics.median(base_cpu):.2f} s "
            f"(medians)\nratio curl/base: {baseline / before:.2f}; this command is "
            f"{before / command:.2f}x as fast"
        )
    if HASHED in seconds:
        hashed = statistics.median(seconds[HASHED])
        print(
            f"curl + sha256     {hashed:6.2f} s (median; the PUTs with every file hashed beside "
            f"them)\nratio curl/(curl + sha256): {baseline / hashed:.2f}  (the most a client that "
            "hashes every byte on these cores reaches, start-up and requests not counted)"
        )
        started = statistics.median(seconds[STARTED])
        print(
            f"python start-up   {started:6.2f} s (median; {LEAST_IMPORTS})\nratio curl/"
            f"(curl + sha256 + start-up): {baseline / (hashed + started):.2f}  (the most a "
            "client in Python reaches, its requests not counted)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description="tracesets upload of a directory vs curl PUTs")
    parser.add_argument("--quick", action="store_true", help="128 MiB instead of 1 GiB")
    parser.add_argument("--size-mib", type=int, help="total size in MiB")
    parser.add_argument("--runs", type=int, default=3, help="runs of each (median is kept)")
    parser.add_argument("--files", type=int, default=FILES, help=f"files (default {FILES})")
    parser.add_argument("--tmp-dir", type=Path, help="where the files and the service's data go")
    parser.add_argument(
        "--floor", action="store_true", help="also curl with every file hashed beside it"
    )
    parser.add_argument(
        "--base-src", type=Path, help="also the command of an earlier commit's src folder"
    )
    parser.add_argument(
        "--split-cores",
        action="store_true",
        help="the service on one core, the contenders on another (two machines)",
    )
    args = parser.parse_args()
    total = (args.size_mib or (128 if args.quick else 1024)) * 1024 * 1024
    curl = shutil.which("curl") or debian_command("curl", "curl")
    if curl is None:
        raise SystemExit("curl is needed")

    with (
        tempfile.TemporaryDirectory(prefix="tracesets-bench-", dir=args.tmp_dir) as tmp,
        ExitStack() as stack,
    ):
        workdir = Path(tmp)
        directory = workdir / "traces"
        print(
            f"cli-upload: {args.files} files, {total / 2**20:,.0f} MiB of random bytes in "
            f"{directory}",
            flush=True,
        )
        digests = make_directory(directory, total, args.files)
        service = start_service(stack, workdir, split=args.split_cores)
        run_command(service, directory)  # unmeasured: warms the page cache and the service
        hashing = [sys.executable, "-I", "-S", "-c", HASHER, *(str(directory / n) for n in digests)]
        contenders: dict[str, Callable[[], float]] = {
            "tracesets": lambda: run_command(service, directory, cpu),
            "curl": lambda: run_curl(curl, service, directory, digests),
        }
        if args.base_src is not None:
            base = compiled(args.base_src.resolve())
            contenders[BASE] = lambda: run_command(service, directory, base_cpu, base)
        if args.floor:
            contenders[HASHED] = lambda: run_curl(curl, service, directory, digests, hashing)
            contenders[STARTED] = lambda: run_started([sys.executable, "-c", LEAST_IMPORTS])
        seconds: dict[str, list[float]] = {name: [] for name in contenders}
        cpu: list[float] = []
        base_cpu: list[float] = []
        for run in range(1, args.runs + 1):
            for name, contender in contenders.items():
                os.sync()
                took = contender()
                seconds[name].append(took)
                rate = "" if name == STARTED else f"  {total / took / MB:8.1f} MB/s"
                print(f"  run {run}  {name:<15}  {took:6.2f} s{rate}", flush=True)

    report(seconds, total, cpu, base_cpu)


if __name__ == "__main__":
    main()
