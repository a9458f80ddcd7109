"""CPU per request of each step of ``load.py``'s loop, through the whole app, in process.

``load.py`` measures what 200 clients get from a served process on a shared machine, and
its latencies move with whatever else runs. This bench measures what each request costs:
one process runs the app (its lifespan, middleware, routes, group commit, inspection
queue) on SQLite and local files, and sends it ASGI requests one at a time, no sockets:
upload-url, PUT of a 16 KiB file, complete, get, list (a page of 20, every other one
filtered by workload family), promote. It prints the process's CPU time per step (every
thread's, so the commits and the inspections of the completed tracesets count), after a
warm-up. With ``--base-src`` the same loop runs against an earlier commit's source,
alternating with this one, in fresh processes each round.

    .venv/bin/python bench/request_cpu.py [--loops 300] [--rounds 5] [--base-src DIR] [--no-inspection]
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Awaitable
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit

from servers import compiled

STEPS: Final = ("upload-url", "PUT", "complete", "get", "list", "promote")
TOKEN: Final = "bench-token-" + "0" * 24
METADATA: Final = {"shape": {"rankCount": 8}, "parallelism": {"dp": 4, "tp": 2}}
PROMOTED: Final = {**METADATA, "workload_family": "llama", "precision": "bf16"}
WARM_UP: Final = 30

Headers = tuple[tuple[bytes, bytes], ...]


class InProcess:
    """ASGI requests to ``app``, one at a time, as uvicorn would hand them over."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(
        self, method: str, path: str, query: str = "", body: bytes = b"", extra: Headers = ()
    ) -> tuple[int, bytes]:
        headers = [
            (b"host", b"127.0.0.1:8000"),
            (b"authorization", f"Bearer {TOKEN}".encode()),
            (b"content-type", b"application/json"),
            (b"accept-encoding", b"gzip, deflate"),
            (b"content-length", str(len(body)).encode()),
            *extra,
        ]
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": method,
            "scheme": "http",
            "path": path,
            "raw_path": path.encode(),
            "query_string": query.encode(),
            "root_path": "",
            "headers": headers,
            "client": ("127.0.0.1", 50000),
            "server": ("127.0.0.1", 8000),
            "state": {},
        }
        given = False
        answer: dict[str, Any] = {"body": b""}

        async def receive() -> dict[str, Any]:
            nonlocal given
            if not given:
                given = True
                return {"type": "http.request", "body": body, "more_body": False}
            await asyncio.Event().wait()  # no disconnect: the request is answered first
            raise AssertionError("unreachable")

        async def send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                answer["status"] = message["status"]
            else:
                answer["body"] += message.get("body", b"")

        await self.app(scope, receive, send)
        return answer["status"], answer["body"]


async def loop_cpu(loops: int, inspect: bool) -> dict[str, float]:
    """Seconds of CPU per request of each step, over ``loops`` rounds after a warm-up.

    The inspection of each completed traceset runs beside the next requests, so its CPU
    counts in whichever steps it overlaps: the mean is the figure; ``inspect`` False
    leaves it out, and each step's figure is its own."""
    from tracesets.api.app import create_app
    from tracesets.settings import Settings

    environment = {
        "TRACESETS_BOOTSTRAP_TOKEN": TOKEN,
        "TRACESETS_RATE_LIMIT": "1000000000",
        "TRACESETS_RATE_BURST": "1000000000",
        "TRACESETS_INSPECT_IN_SERVICE": "true" if inspect else "false",
    }
    app = create_app(Settings.from_env(environment, data_dir=Path(tempfile.mkdtemp())))
    call = InProcess(app)
    data = os.urandom(16 * 1024)
    file = {"name": "trace.json", "size": len(data), "role": "primary"}
    file["sha256"] = hashlib.sha256(data).hexdigest()
    spent: dict[str, float] = defaultdict(float)

    async def step(name: str, expect: int, request: Awaitable[tuple[int, bytes]]) -> bytes:
        started = time.process_time()  # the request starts when awaited, not when made
        status, body = await request
        spent[name] += time.process_time() - started
        if status != expect:
            raise RuntimeError(f"{name} answered {status}: {body[:300]!r}")
        return body

    async with app.router.lifespan_context(app):
        for n in range(WARM_UP + loops):
            if n == WARM_UP:
                spent.clear()
            body = json.dumps({"name": f"cpu {n}", "files": [file], "workloadMetadata": METADATA})
            created = json.loads(
                await step(
                    "upload-url",
                    201,
                    call("POST", "/api/v1/tracesets/upload-url", body=body.encode()),
                )
            )
            url = urlsplit(created["uploads"][0]["url"])
            octets = ((b"content-type", b"application/octet-stream"),)
            await step("PUT", 200, call("PUT", url.path, url.query, data, octets))
            path = f"/api/v1/tracesets/{created['tracesetId']}"
            await step("complete", 200, call("POST", f"{path}/complete"))
            await step("get", 200, call("GET", path))
            query = "limit=20" + ("&workload_family=llama" if n % 2 else "")
            await step("list", 200, call("GET", "/api/v1/tracesets", query))
            promoted = json.dumps({"workloadMetadata": PROMOTED}).encode()
            await step("promote", 200, call("POST", f"{path}/promote", body=promoted))
    return {name: spent[name] / loops for name in STEPS}


def measured(loops: int, inspect: bool, python_path: str | None) -> dict[str, float]:
    """One run in a fresh process (``python_path`` first on its path: an earlier source)."""
    env = {**os.environ, **({"PYTHONPATH": python_path} if python_path else {})}
    argv = [sys.executable, __file__, "--one", "--loops", str(loops)]
    argv += [] if inspect else ["--no-inspection"]
    out = subprocess.run(argv, env=env, capture_output=True, text=True, check=True).stdout
    figures: dict[str, float] = json.loads(out.splitlines()[-1])
    return figures


def report(name: str, runs: list[dict[str, float]]) -> dict[str, float]:
    medians = {}
    for step in (*STEPS, "mean"):
        values = [run[step] * 1000 for run in runs]
        medians[step] = statistics.median(values)
        print(
            f"  {name:<5} {step:<11} {medians[step]:6.3f} ms CPU ({min(values):.3f}-{max(values):.3f})"
        )
    return medians


def main() -> None:
    parser = argparse.ArgumentParser(description="CPU per request of each step, in process")
    parser.add_argument("--loops", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--base-src", type=Path, help="an earlier commit's src folder")
    parser.add_argument(
        "--no-inspection", action="store_true", help="no inspection of the completed tracesets"
    )
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        figures = asyncio.run(loop_cpu(args.loops, not args.no_inspection))
        figures["mean"] = sum(figures.values()) / len(STEPS)
        print(json.dumps(figures))
        return
    sides: dict[str, str | None] = {"this": None}
    if args.base_src is not None:
        sides = {"base": str(compiled(args.base_src.resolve())), "this": None}
    runs: dict[str, list[dict[str, float]]] = {side: [] for side in sides}
    for round_ in range(1, args.rounds + 1):
        for side, python_path in sides.items():
            run = measured(args.loops, not args.no_inspection, python_path)
            runs[side].append(run)
            print(
                f"round {round_} {side:<5} mean {run['mean'] * 1000:.3f} ms CPU a request",
                flush=True,
            )
    print(f"\nmedian of {args.rounds} runs of {args.loops} loops each (min-max):")
    medians = {side: report(side, side_runs) for side, side_runs in runs.items()}
    if "base" in medians:
        print("\nbase / this, per step:")
        for step in (*STEPS, "mean"):
            print(f"  {step:<11} {medians['base'][step] / medians['this'][step]:5.2f}x")


if __name__ == "__main__":
    main()
