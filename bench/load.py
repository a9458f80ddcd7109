"""Many clients at once: a bounded mix of every step of the service's life, for a fixed time.

Starts ``tracesets serve`` (one uvicorn worker, default settings: the per-token rate
limit stays on) in a fresh folder, on SQLite and local files, or on PostgreSQL and S3
when ``DATABASE_URL`` / ``TRACESETS_STORAGE_URL`` are set (or the ``TRACESETS_TEST_*``
settings that scripts/with-scaled-services exports). Each client has a token of its own
and loops until the time is up: upload-url, PUT the file, complete, get, list (a page of
20, every other time filtered), promote. Every step is timed; any answer but the one
expected, and any error, counts as an error. A 503 with Retry-After (the service's bound
on requests or uploads at once) and a connection error (a kept-alive connection the
service closed as it was reused) are sent again after the wait the project's client would
make (``tracesets.client.retry.RetryPolicy``), counted as retries, their waits in the
step's time. It prints throughput, p50/p99 per step, the retries and the error count. Everything stays on loopback and is removed at the end.

    .venv/bin/python bench/load.py [--clients 200] [--seconds 30] [--file-kib 16] [--ramp 2]
    .venv/bin/python bench/load.py --base-src DIR [--rounds N]   # against an earlier commit
    scripts/with-scaled-services .venv/bin/python bench/load.py
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import secrets
import ssl
import statistics
import tempfile
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import httpx
from servers import LOOPBACK, compiled, free_port, running, service_argv

from tracesets.client.retry import RetryPolicy, retry_after

STEPS: Final = ("upload-url", "PUT", "complete", "get", "list", "promote")
WORKSPACES: Final = 8  # clients share them, so lists page through others' tracesets
METADATA: Final = {"shape": {"rankCount": 8}, "parallelism": {"dp": 4, "tp": 2}}
PROMOTED: Final = {**METADATA, "workload_family": "llama", "precision": "bf16"}


def backend_env() -> dict[str, str]:
    """The backends to run on: the service's own settings, else the test runs' ones."""
    env: dict[str, str] = {}
    for setting, test_setting in (
        ("DATABASE_URL", "TRACESETS_TEST_DATABASE_URL"),
        ("TRACESETS_STORAGE_URL", "TRACESETS_TEST_STORAGE_URL"),
    ):
        value = os.environ.get(setting) or os.environ.get(test_setting)
        if value:
            env[setting] = value
    return env


def make_tokens(data_dir: Path, env: dict[str, str], clients: int) -> list[str]:
    """A token for each client (written straight into the service's database)."""
    from tracesets.db.engine import Database, sqlite_url
    from tracesets.service import tokens

    db = Database(env.get("DATABASE_URL") or sqlite_url(data_dir))
    try:
        workspace = "load-" + secrets.token_hex(4)
        return [
            tokens.create(db, workspace=f"{workspace}-{i % WORKSPACES}", name=f"client {i}")
            for i in range(clients)
        ]
    finally:
        db.dispose()


#: The project's client's retries: how many, and how long it waits between them.
RETRIES: Final = RetryPolicy()


@dataclass
class Tally:
    timings: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    errors: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    retries: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    #: Retries by why: "503" (asked to come back later) or "connection" (a connection error).
    retried_for: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    examples: list[str] = field(default_factory=list)
    start: float = field(default_factory=time.monotonic)
    #: When the first and the last retry or error happened, in seconds from the start.
    troubled: list[float] = field(default_factory=list)

    def error(self, step: str, why: str) -> None:
        self.errors[step] += 1
        self._when()
        if len(self.examples) < 5:
            self.examples.append(f"{step}: {why[:300]}")

    def retry(self, step: str, why: str) -> None:
        self.retries[step] += 1
        self.retried_for[why] += 1
        self._when()

    def _when(self) -> None:
        now = time.monotonic() - self.start
        self.troubled[:] = [self.troubled[0], now] if self.troubled else [now, now]


class Client:
    """One client: its own connections and token; runs the mix until ``until``."""

    def __init__(
        self, url: str, token: str, tally: Tally, data: bytes, number: int, tls: ssl.SSLContext
    ) -> None:
        self.api = httpx.AsyncClient(
            base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=60, verify=tls
        )
        # Signed URLs: the service's or S3's.
        self.storage = httpx.AsyncClient(timeout=60, verify=tls)
        self.tally = tally
        self.data = data
        self.number = number
        self.file = {
            "name": "rank0.json",
            "size": len(data),
            "role": "primary",
            "sha256": hashlib.sha256(data).hexdigest(),
        }

    async def step(
        self, name: str, expect: int, send: Callable[[], Awaitable[httpx.Response]]
    ) -> httpx.Response | None:
        start = time.perf_counter()
        for attempt in range(RETRIES.retries + 1):
            last = attempt == RETRIES.retries
            try:
                answer = await send()
            except httpx.TransportError as exc:  # e.g. a kept-alive connection closed under it
                if last:
                    self.tally.error(name, f"{type(exc).__name__}: {exc}")
                    return None
                self.tally.retry(name, "connection")
                await asyncio.sleep(RETRIES.delay(attempt, exc))
                continue
            except httpx.HTTPError as exc:
                self.tally.error(name, f"{type(exc).__name__}: {exc}")
                return None
            if last or answer.status_code != 503 or retry_after(answer) is None:
                break
            self.tally.retry(name, "503")
            await asyncio.sleep(RETRIES.delay(attempt, answer))
        self.tally.timings[name].append(time.perf_counter() - start)
        if answer.status_code != expect:
            self.tally.error(name, f"{answer.status_code} {answer.text}")
            return None
        return answer

    async def round(self, n: int) -> None:
        body = {
            "name": f"load {self.number}.{n}",
            "files": [self.file],
            "workloadMetadata": METADATA,
        }
        created = await self.step(
            "upload-url", 201, lambda: self.api.post("/api/v1/tracesets/upload-url", json=body)
        )
        if created is None:
            return
        traceset_id = created.json()["tracesetId"]
        [target] = created.json()["uploads"]

        def put() -> Awaitable[httpx.Response]:
            return self.storage.put(target["url"], content=self.data, headers=target["headers"])

        if await self.step("PUT", 200, put) is None:
            return
        path = f"/api/v1/tracesets/{traceset_id}"
        if await self.step("complete", 200, lambda: self.api.post(f"{path}/complete")) is None:
            return
        await self.step("get", 200, lambda: self.api.get(path))
        query: dict[str, Any] = {"limit": 20}
        if n % 2:
            query["workload_family"] = "llama"
        await self.step("list", 200, lambda: self.api.get("/api/v1/tracesets", params=query))
        promoted = {"workloadMetadata": PROMOTED}
        await self.step("promote", 200, lambda: self.api.post(f"{path}/promote", json=promoted))

    async def run(self, until: float, delay: float) -> int:
        rounds = 0
        try:
            await asyncio.sleep(delay)
            while time.monotonic() < until:
                await self.round(rounds)
                rounds += 1
        finally:
            await self.api.aclose()
            await self.storage.aclose()
        return rounds


async def drive(
    url: str, tokens: list[str], seconds: float, data: bytes, ramp: float = 0.0
) -> tuple[Tally, int, float]:
    """Run the clients for ``seconds``; with ``ramp``, client i starts i/n of it in."""
    # One TLS context for all: each client building its own (loading the CA bundle) took
    # a minute for 400 of them on a busy machine, all of it counted in the run before.
    tls = ssl.create_default_context()
    tally = Tally()
    clients = [Client(url, token, tally, data, i, tls) for i, token in enumerate(tokens)]
    start = tally.start = time.monotonic()
    rounds = await asyncio.gather(
        *(c.run(start + seconds, ramp * i / len(clients)) for i, c in enumerate(clients))
    )
    return tally, sum(rounds), time.monotonic() - start


def cpu_seconds(pid: int) -> float:
    """User and system CPU time of a process so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def percentile(sorted_values: list[float], share: float) -> float:
    if not sorted_values:
        return float("nan")
    return sorted_values[min(len(sorted_values) - 1, int(share * len(sorted_values)))]


def report(
    tally: Tally, rounds: int, elapsed: float, clients: int, backends: str
) -> dict[str, Any]:
    total = sum(len(t) for t in tally.timings.values())
    errors, retries = sum(tally.errors.values()), sum(tally.retries.values())
    print(f"\n{clients} clients, {elapsed:.1f} s, {backends}")
    print(
        f"{'step':<12}{'count':>8}{'per s':>9}{'p50 ms':>9}{'p99 ms':>9}{'max ms':>9}"
        f"{'retries':>9}{'errors':>8}"
    )
    steps: dict[str, Any] = {}
    for step in STEPS:
        timings = sorted(tally.timings.get(step, []))
        p50, p99 = percentile(timings, 0.50) * 1000, percentile(timings, 0.99) * 1000
        worst = timings[-1] * 1000 if timings else float("nan")
        print(
            f"{step:<12}{len(timings):>8,}{len(timings) / elapsed:>9.1f}"
            f"{p50:>9.1f}{p99:>9.1f}{worst:>9.1f}{tally.retries.get(step, 0):>9}"
            f"{tally.errors.get(step, 0):>8}"
        )
        steps[step] = {
            "count": len(timings),
            "p50_ms": p50,
            "p99_ms": p99,
            "retries": tally.retries.get(step, 0),
            "errors": tally.errors.get(step, 0),
        }
    print(
        f"{'all':<12}{total:>8,}{total / elapsed:>9.1f}{'':>27}{retries:>9}{errors:>8}"
        f"\n{rounds:,} rounds ({rounds / elapsed:.1f}/s): requests {total / elapsed:.0f}/s "
        f"(a retried step counts once), retries {retries}, errors {errors}"
    )
    if tally.retried_for:
        print("retried: " + ", ".join(f"{n} for {why}" for why, n in tally.retried_for.items()))
    if tally.troubled:
        first, last = tally.troubled
        print(f"retries and errors between {first:.1f} s and {last:.1f} s from the start")
    for example in tally.examples:
        print(f"  error: {example}")
    return {
        "clients": clients,
        "seconds": elapsed,
        "backends": backends,
        "requests_per_second": total / elapsed,
        "errors": errors,
        "retries": retries,
        "retried_for": dict(tally.retried_for),
        "steps": steps,
    }


def run_once(args: argparse.Namespace, env: dict[str, str], backends: str) -> dict[str, Any]:
    """One fresh service, ``args.clients`` clients for ``args.seconds``; its figures."""
    # Each run starts with no dirty pages of the run before: on ext4 an fsync may wait for
    # them to reach the disk, and the service's PUTs fsync (in two runs, the third round's
    # PUTs stalled 2-3 s just after the other service's round).
    os.sync()
    with tempfile.TemporaryDirectory(prefix="tracesets-load-") as scratch:
        workdir = Path(scratch)
        port = free_port()
        argv = service_argv(port, workdir / "service", env.get("PYTHONPATH"))
        argv[argv.index("--workers") + 1] = str(args.workers)
        url = f"http://{LOOPBACK}:{port}"
        with running(
            argv, ready_url=f"{url}/healthz", log=workdir / "service.log", env=env
        ) as service:
            tokens = make_tokens(workdir / "service", env, args.clients)
            print(
                f"{args.clients} clients for {args.seconds:.0f} s against {url} ({backends}) …",
                flush=True,
            )
            data = os.urandom(args.file_kib * 1024)
            service_cpu, own_cpu = cpu_seconds(service.pid), cpu_seconds(os.getpid())
            tally, rounds, elapsed = asyncio.run(drive(url, tokens, args.seconds, data, args.ramp))
            service_cpu = cpu_seconds(service.pid) - service_cpu
            own_cpu = cpu_seconds(os.getpid()) - own_cpu
    figures = report(tally, rounds, elapsed, args.clients, backends)
    print(
        f"CPU: service {service_cpu / elapsed:.0%} of a core, these clients "
        f"{own_cpu / elapsed:.0%} ({os.cpu_count()} cores in all)"
    )
    per_request = 1000 * service_cpu / max(1, sum(s["count"] for s in figures["steps"].values()))
    print(f"service CPU per request: {per_request:.2f} ms")
    figures["cpu"] = {
        "service": service_cpu / elapsed,
        "clients": own_cpu / elapsed,
        "service_ms_per_request": per_request,
    }
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--file-kib", type=int, default=16, help="size of each uploaded file")
    parser.add_argument(
        "--ramp",
        type=float,
        default=0.0,
        help="start the clients one after the other over this many seconds (default: all at "
        "once, as the ranks of a job that ends)",
    )
    parser.add_argument("--workers", type=int, default=1, help="uvicorn workers of the service")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument(
        "--base-src",
        type=Path,
        help="also run the service of this source folder (an earlier commit's src, e.g. from "
        "git archive), alternating with this one",
    )
    parser.add_argument("--rounds", type=int, default=1, help="runs of each service")
    args = parser.parse_args()

    env = backend_env()
    backends = "PostgreSQL + S3" if env else "SQLite + local files"
    if "DATABASE_URL" in env and "TRACESETS_STORAGE_URL" not in env:
        backends = "PostgreSQL + local files"
    services = {"this": env}
    if args.base_src is not None:
        services = {
            "base": {**env, "PYTHONPATH": str(compiled(args.base_src.resolve()))},
            "this": env,
        }
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in services}
    for round_ in range(1, args.rounds + 1):
        for name, service_env in services.items():
            print(f"\n== round {round_}, {name} service", flush=True)
            runs[name].append(run_once(args, service_env, backends))
    print()
    for name, figures in runs.items():
        rates = [f["requests_per_second"] for f in figures]
        worst_p99 = max(max(s["p99_ms"] for s in f["steps"].values()) for f in figures)
        errors = sum(f["errors"] for f in figures)
        retries = sum(f["retries"] for f in figures)
        cpu = [f["cpu"]["service_ms_per_request"] for f in figures]
        print(
            f"{name:<5} requests/s median {statistics.median(rates):7.1f} "
            f"(runs {', '.join(f'{r:.0f}' for r in rates)}), worst step p99 "
            f"{worst_p99:.0f} ms, retries {retries}, errors {errors}, service CPU "
            f"{statistics.median(cpu):.2f} ms/request (runs {', '.join(f'{c:.2f}' for c in cpu)})"
        )
    if "base" in runs:
        this = statistics.median(f["requests_per_second"] for f in runs["this"])
        base = statistics.median(f["requests_per_second"] for f in runs["base"])
        print(f"ratio this/base: {this / base:.2f}")
    if args.json:
        args.json.write_text(json.dumps(runs, indent=2))


if __name__ == "__main__":
    main()
