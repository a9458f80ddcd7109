"""Upload-url requests per second: the service against a bare Starlette endpoint.

Both run under uvicorn with one worker on loopback, each with a fresh SQLite file in
WAL mode with ``synchronous=FULL``; both get the same load (``wrk``, installed from
Debian if missing, else bench/loadgen.py) with the same body: the source document's
example, a one-file upload of a 256-rank trace. The service also checks the bearer
token, validates the request and its workload metadata, inserts the traceset and its
file, reads them back and signs the upload URL; the baseline parses and inserts.

    .venv/bin/python bench/upload_url.py [--quick] [--base-src DIR]

With ``--base-src`` (an earlier commit's ``src``) that service runs too, as a third
server in each round, so a change is measured against the code before it in one run.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import urllib.request
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from servers import LOOPBACK, compiled, debian_command, free_port, running, service_argv

HERE: Final = Path(__file__).resolve().parent
TOKEN: Final = "bench-token-" + "0" * 24
PATH: Final = "/api/v1/tracesets/upload-url"

BODY: Final = json.dumps(
    {
        "name": "GPT training, 256 ranks",
        "files": [
            {
                "name": "traces.zip",
                "size": 1048576,
                "role": "primary",
                "sha256": hashlib.sha256(b"traces.zip").hexdigest(),
            }
        ],
        "workloadMetadata": {
            "parallelism": {"dp": 32, "tp": 8, "pp": 1},
            "shape": {"rankCount": 256},
        },
    }
).encode()
HEADERS: Final = {"Content-Type": "application/json", "Authorization": f"Bearer {TOKEN}"}


@dataclass(frozen=True, slots=True)
class Run:
    requests: int
    seconds: float
    unexpected: int
    cpu_seconds: float = 0.0  # user + sys of the server process during the run

    @property
    def cpu_ms_per_request(self) -> float:
        return 1000 * self.cpu_seconds / self.requests if self.requests else float("nan")

    @property
    def per_second(self) -> float:
        return self.requests / self.seconds


class Load:
    """The same concurrent POST, from a process of its own, for a fixed time."""

    def __init__(self, workdir: Path, connections: int, mode: str) -> None:
        self.connections = connections
        self.body_file = workdir / "body.json"
        self.body_file.write_bytes(BODY)
        self.script = workdir / "post.lua"
        headers = "".join(f'wrk.headers["{k}"] = "{v}"\n' for k, v in HEADERS.items())
        self.script.write_text(
            f'wrk.method = "POST"\n{headers}wrk.body = [==[{BODY.decode()}]==]\n'
        )
        self.wrk = debian_command("wrk", "wrk") if mode in ("auto", "wrk") else None
        if mode == "wrk" and self.wrk is None:
            raise SystemExit("wrk is not installed and could not be installed")
        self.name = "wrk" if self.wrk else "bench/loadgen.py"

    def run(self, url: str, seconds: float) -> Run:
        if self.wrk is not None:
            return self._wrk(url, seconds)
        return self._loadgen(url, seconds)

    def _wrk(self, url: str, seconds: float) -> Run:
        assert self.wrk is not None
        argv = [self.wrk, "-t1", f"-c{self.connections}", f"-d{max(1, round(seconds))}s"]
        argv += ["--timeout", "30s", "-s", str(self.script), url]
        out = subprocess.run(argv, capture_output=True, text=True, check=True, timeout=600).stdout
        found = re.search(r"(\d+) requests in ([\d.]+)(m?s)", out)
        if found is None:
            raise RuntimeError(f"cannot read wrk's output:\n{out}")
        elapsed = float(found[2]) / (1000 if found[3] == "ms" else 1)
        failed = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
        errors = re.search(
            r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out
        )
        unexpected = (int(failed[1]) if failed else 0) + (
            sum(int(n) for n in errors.groups()) if errors else 0
        )
        return Run(int(found[1]), elapsed, unexpected)

    def _loadgen(self, url: str, seconds: float) -> Run:
        argv = [sys.executable, str(HERE / "loadgen.py"), url, "--body-file", str(self.body_file)]
        argv += ["--seconds", str(seconds), "--connections", str(self.connections)]
        for name, value in HEADERS.items():
            if name != "Content-Type":
                argv += ["--header", f"{name}: {value}"]
        out = subprocess.run(argv, capture_output=True, text=True, check=True, timeout=600).stdout
        fields = dict(part.split("=") for part in out.split())
        return Run(int(fields["requests"]), float(fields["seconds"]), int(fields["unexpected"]))


def check_answers_201(url: str) -> None:
    request = urllib.request.Request(url, data=BODY, headers=HEADERS, method="POST")
    with urllib.request.urlopen(request, timeout=30) as answer:
        if answer.status != 201:
            raise RuntimeError(f"{url} answered {answer.status}, not 201")


def cpu_seconds(pid: int) -> float:
    """User and system CPU time of a process so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def alternate(
    load: Load, targets: dict[str, tuple[str, int]], rounds: int, seconds: float
) -> dict[str, list[Run]]:
    """Each target's runs, round after round, alternating (a warm-up first).

    A target is its URL and its server's process id, whose CPU time each run records:
    on a shared machine, CPU time per request varies less than requests per second.
    """
    measured: dict[str, list[Run]] = {name: [] for name in targets}
    for round_ in range(1, rounds + 1):
        for name, (url, pid) in targets.items():
            if round_ == 1:
                load.run(url, min(seconds, 3.0))
            before = cpu_seconds(pid)
            run = load.run(url, seconds)
            run = Run(run.requests, run.seconds, run.unexpected, cpu_seconds(pid) - before)
            measured[name].append(run)
            warning = f"  ({run.unexpected} not 2xx or failed!)" if run.unexpected else ""
            print(
                f"  round {round_}  {name:<8}  {run.per_second:8.1f} req/s  "
                f"({run.requests} in {run.seconds:.1f} s)  "
                f"{run.cpu_ms_per_request:.3f} ms CPU/request{warning}",
                flush=True,
            )
    return measured


def summary(name: str, runs: list[Run]) -> tuple[float, float]:
    """Print the median and spread of ``runs``; return the medians (req/s, CPU ms/request)."""
    rates = [r.per_second for r in runs]
    cpu = [r.cpu_ms_per_request for r in runs]
    rate, per_request = statistics.median(rates), statistics.median(cpu)
    print(
        f"{name:<9} {rate:8.1f} req/s (median; {min(rates):.0f}-{max(rates):.0f})  "
        f"{per_request:.3f} ms CPU/request ({min(cpu):.3f}-{max(cpu):.3f})"
    )
    return rate, per_request


def main() -> None:
    parser = argparse.ArgumentParser(description="Upload-url requests/s: service vs bare endpoint")
    parser.add_argument("--quick", action="store_true", help="1 round of 3 s (default 5 of 6 s)")
    parser.add_argument("--seconds", type=float, help="length of each measured run")
    parser.add_argument("--rounds", type=int, help="measured runs of each server, alternating")
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--load", choices=("auto", "wrk", "python"), default="auto")
    parser.add_argument("--base-src", type=Path, help="an earlier commit's src folder")
    args = parser.parse_args()
    seconds: float = args.seconds or (3.0 if args.quick else 6.0)
    rounds: int = args.rounds or (1 if args.quick else 5)

    with tempfile.TemporaryDirectory(prefix="tracesets-bench-") as tmp, ExitStack() as stack:
        workdir = Path(tmp)
        load = Load(workdir, args.connections, "auto" if args.load == "auto" else args.load)

        def serve(name: str, source: Path | None) -> tuple[str, int]:
            """A service (from ``source``, an earlier ``src``, if given): its URL and pid."""
            port = free_port()
            env = {"TRACESETS_BOOTSTRAP_TOKEN": TOKEN}
            env |= {"PYTHONPATH": str(source)} if source is not None else {}
            process = stack.enter_context(
                running(
                    service_argv(port, workdir / name, source),
                    ready_url=f"http://{LOOPBACK}:{port}/healthz",
                    log=workdir / f"{name}.log",
                    env=env,
                )
            )
            return f"http://{LOOPBACK}:{port}{PATH}", process.pid

        served = serve("service", None)
        baseline_port = free_port()
        baseline_argv = [str(Path(sys.executable).parent / "uvicorn"), "baseline_app:app"]
        baseline_argv += ["--app-dir", str(HERE), "--host", LOOPBACK, "--port", str(baseline_port)]
        baseline_argv += ["--workers", "1"]
        baseline_process = stack.enter_context(
            running(
                baseline_argv,
                ready_url=f"http://{LOOPBACK}:{baseline_port}/healthz",
                log=workdir / "baseline.log",
                env={"BASELINE_DB": str(workdir / "baseline.db")},
            )
        )
        targets = {
            "service": served,
            "baseline": (f"http://{LOOPBACK}:{baseline_port}{PATH}", baseline_process.pid),
        }
        if args.base_src is not None:
            targets["base"] = serve("base", compiled(args.base_src.resolve()))
        for url, _ in targets.values():
            check_answers_201(url)

        print(
            f"upload-url: {load.name}, {args.connections} connections, {rounds} x {seconds:g} s "
            f"per server after a {min(seconds, 3.0):g} s warm-up, {os.cpu_count()} CPUs, "
            f"{len(BODY)}-byte body"
        )
        measured = alternate(load, targets, rounds, seconds)

    service, service_cpu = summary("service", measured["service"])
    baseline, baseline_cpu = summary("baseline", measured["baseline"])
    print(f"ratio service/baseline: {service / baseline:.2f}  (target >= 0.8)")
    print(f"CPU per request, baseline/service: {baseline_cpu / service_cpu:.2f}")
    if "base" in measured:
        base, base_cpu = summary("base", measured["base"])
        print(f"ratio base/baseline: {base / baseline:.2f}; service/base: {service / base:.2f}")
        print(f"CPU per request, service/base: {service_cpu / base_cpu:.2f}")


if __name__ == "__main__":
    main()
