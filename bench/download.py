"""``tracesets download`` of a traceset against ``curl --parallel`` fetching the same files.

A traceset of many small files (512 of 34 KB by default, like per-rank traces; ``--files``,
``--size-kb``) uploaded once to the service (``tracesets serve``, one uvicorn worker) on
loopback. Then, alternating, into a fresh empty folder each time:

- ``tracesets download ID --dest DIR``, timed from start to exit: Python start-up, the
  traceset with all its pages of files, per file the redirect and the read, each file's
  sha256 checked, 8 files at a time (the default ``--concurrency``);
- one ``curl --parallel --parallel-max 8 -L`` process asking the same ``files/{name}``
  route for every file and following its redirect: the same requests, no checking.

The ratio is the command's median time over curl's: 1.0 means as fast as curl. Beside
the times: the command's CPU seconds (user + sys), and the service's for each side (both
ask it the same requests; on 2 cores the client's CPU and the service's compete).

    .venv/bin/python bench/download.py [--files N] [--size-kb K] [--runs N]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Final
from urllib.parse import quote

from servers import LOOPBACK, VENV_BIN, debian_command, free_port, running, service_argv

from tracesets import Client

TOKEN: Final = "bench-token-" + "3" * 24
PARALLEL: Final = 8


def make_directory(root: Path, files: int, size: int) -> None:
    root.mkdir(parents=True)
    for rank in range(files):
        (root / f"rank-{rank:05d}.pt.trace.json").write_bytes(os.urandom(size))


def children_cpu() -> float:
    """CPU seconds (user + sys) of this process's finished children so far."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def process_cpu(pid: int) -> float:
    """CPU seconds (user + sys) a running process has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_command(base: str, traceset_id: str, dest: Path, cpu: list[float]) -> float:
    env = {**os.environ, "TRACESETS_URL": base, "TRACESETS_TOKEN": TOKEN}
    argv = [str(VENV_BIN / "tracesets"), "download", traceset_id, "--dest", str(dest)]
    cpu_before = children_cpu()
    started = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=3600, check=False)
    took = time.perf_counter() - started
    cpu.append(children_cpu() - cpu_before)
    if done.returncode != 0:
        raise RuntimeError(f"tracesets download exited {done.returncode}: {done.stderr[-2000:]}")
    return took


def run_curl(curl: str, base: str, traceset_id: str, names: list[str], dest: Path) -> float:
    """Seconds one parallel curl took to fetch every file through its redirect."""
    dest.mkdir()
    config = dest.parent / "curl.config"
    with config.open("w") as out:
        for name in names:
            url = f"{base}/api/v1/tracesets/{traceset_id}/files/{quote(name)}"
            out.write(f'url = "{url}"\noutput = "{dest / name}"\n')
    argv = [curl, "-sS", "--fail", "-L", "--parallel", "--parallel-max", str(PARALLEL)]
    argv += ["-H", f"Authorization: Bearer {TOKEN}", "-K", str(config)]
    started = time.perf_counter()
    subprocess.run(argv, check=True, timeout=3600, capture_output=True)
    took = time.perf_counter() - started
    if len(list(dest.iterdir())) != len(names):
        raise RuntimeError("curl did not fetch every file")
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description="tracesets download vs curl --parallel")
    parser.add_argument("--files", type=int, default=512, help="files in the traceset")
    parser.add_argument("--size-kb", type=int, default=34, help="size of each file in kB")
    parser.add_argument("--runs", type=int, default=5, help="runs of each (median is kept)")
    parser.add_argument("--tmp-dir", type=Path, help="where the files and the service's data go")
    args = parser.parse_args()
    curl = shutil.which("curl") or debian_command("curl", "curl")
    if curl is None:
        raise SystemExit("curl is needed")
    total = args.files * args.size_kb * 1000

    with (
        tempfile.TemporaryDirectory(prefix="tracesets-bench-", dir=args.tmp_dir) as tmp,
        ExitStack() as stack,
    ):
        workdir = Path(tmp)
        print(f"download: {args.files} files of {args.size_kb} kB", flush=True)
        make_directory(workdir / "traces", args.files, args.size_kb * 1000)
        port = free_port()
        base = f"http://{LOOPBACK}:{port}"
        service = stack.enter_context(
            running(
                service_argv(port, workdir / "service"),
                ready_url=f"{base}/healthz",
                log=workdir / "service.log",
                env={"TRACESETS_BOOTSTRAP_TOKEN": TOKEN},
            )
        )
        with Client(base, TOKEN) as client:
            traceset = client.upload(
                workdir / "traces", name="bench", workload_metadata={"shape": {"rankCount": 1}}
            )
        names = [f.name for f in traceset.files]
        seconds: dict[str, list[float]] = {"tracesets": [], "curl": []}
        served: dict[str, list[float]] = {"tracesets": [], "curl": []}
        cpu: list[float] = []
        for run in range(1, args.runs + 1):
            for name, times in seconds.items():
                dest = workdir / f"{name}-{run}"
                service_before = process_cpu(service.pid)
                took = (
                    run_command(base, traceset.id, dest, cpu)
                    if name == "tracesets"
                    else run_curl(curl, base, traceset.id, names, dest)
                )
                served[name].append(process_cpu(service.pid) - service_before)
                shutil.rmtree(dest)
                times.append(took)
                print(
                    f"  run {run}  {name:<9}  {took:6.2f} s  service CPU {served[name][-1]:.2f} s",
                    flush=True,
                )

    command = statistics.median(seconds["tracesets"])
    baseline = statistics.median(seconds["curl"])
    print(
        f"tracesets download  {command:6.2f} s  {total / command / 1e6:6.1f} MB/s (median; "
        "start-up, all pages of files, redirects, reads, sha256 checks)"
    )
    print(
        f"curl --parallel     {baseline:6.2f} s  {total / baseline / 1e6:6.1f} MB/s (median; "
        f"redirects and reads, {PARALLEL} at a time)"
    )
    print(
        f"tracesets download CPU (user + sys) {statistics.median(cpu):.2f} s (median; "
        f"min {min(cpu):.2f}, max {max(cpu):.2f})"
    )
    for name, times in seconds.items():
        print(
            f"  {name} spread: min {min(times):.2f} s, max {max(times):.2f} s; service CPU "
            f"{statistics.median(served[name]):.2f} s (median)"
        )
    print(f"ratio tracesets/curl: {command / baseline:.2f}  (1.0 = as fast as curl)")


if __name__ == "__main__":
    main()
