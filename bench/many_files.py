"""Per-file latency against the traceset's size: one PUT, one download, at 10, 1,000 and
10,000 files in one traceset, in one run.

One service (``tracesets serve``, one worker, SQLite and local files, as people run it).
Three pending tracesets of 1-byte files (10, 1,000 and 10,000 files) get their PUTs
measured; then each is completed and its downloads measured: the ``files/{name}``
redirect, then the signed GET it points to. Requests go one at a time on one
keep-alive connection, to random files of the traceset. Rounds alternate the sizes
(request by request; the order rotates each round); each figure is the median over
rounds of each round's median latency, with the spread (lowest and highest round
median).

    .venv/bin/python bench/many_files.py [--rounds 5] [--requests 200]
"""

from __future__ import annotations

import argparse
import hashlib
import http.client
import json
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final
from urllib.parse import quote, urlsplit

from servers import LOOPBACK, free_port, running, service_argv

TOKEN: Final = "bench-token-" + "3" * 24
SIZES: Final = (10, 1_000, 10_000)
DATA: Final = b"x"
AUTH: Final = {"Authorization": f"Bearer {TOKEN}"}


class Connection:
    """One keep-alive connection to the service; every answer is read whole and checked."""

    def __init__(self, port: int) -> None:
        self.http = http.client.HTTPConnection(LOOPBACK, port, timeout=120)

    def request(
        self,
        method: str,
        target: str,
        body: bytes | None = None,
        headers: dict[str, str] | None = None,
        expect: int = 200,
    ) -> http.client.HTTPResponse:
        self.http.request(method, target, body=body, headers=headers or {})
        answer = self.http.getresponse()
        answer.read()
        if answer.status != expect:
            raise RuntimeError(f"{method} {target[:80]} answered {answer.status}, not {expect}")
        return answer

    def json(self, method: str, target: str, payload: Any, expect: int) -> Any:
        self.http.request(
            method,
            target,
            body=json.dumps(payload).encode(),
            headers={**AUTH, "Content-Type": "application/json"},
        )
        answer = self.http.getresponse()
        text = answer.read()
        if answer.status != expect:
            raise RuntimeError(f"{method} {target} answered {answer.status}: {text[:300]!r}")
        return json.loads(text)


def path_of(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.path}?{parts.query}"


def create(conn: Connection, count: int) -> tuple[str, list[str]]:
    """A pending traceset of ``count`` 1-byte files; its id and each file's PUT target."""
    sha256 = hashlib.sha256(DATA).hexdigest()
    files = [
        {"name": f"rank-{i}.json", "size": len(DATA), "role": "supporting", "sha256": sha256}
        for i in range(count)
    ]
    created = conn.json(
        "POST", "/api/v1/tracesets/upload-url", {"name": f"{count} files", "files": files}, 201
    )
    return created["tracesetId"], [path_of(u["url"]) for u in created["uploads"]]


def alternate(
    jobs: dict[int, Callable[[], object]], rounds: int, requests: int, what: str
) -> dict[int, list[float]]:
    """Each size's round medians (ms). Within a round the sizes take turns request by
    request (the order rotates each round), so a burst of load on this shared machine
    falls on every size alike."""
    measured: dict[int, list[float]] = {size: [] for size in jobs}
    order = list(jobs)
    for _ in range(max(10, requests // 10)):  # warm-up, unmeasured
        for job in jobs.values():
            job()
    for round_ in range(1, rounds + 1):
        shift = (round_ - 1) % len(order)
        turn = order[shift:] + order[:shift]
        took: dict[int, list[float]] = {size: [] for size in jobs}
        for _ in range(requests):
            for size in turn:
                start = time.perf_counter()
                jobs[size]()
                took[size].append(time.perf_counter() - start)
        for size in order:
            measured[size].append(statistics.median(took[size]) * 1000)
        line = "  ".join(f"{s:>6,}: {measured[s][-1]:6.2f} ms" for s in order)
        print(f"  {what} round {round_}  {line}", flush=True)
    return measured


def report(what: str, measured: dict[int, list[float]]) -> None:
    medians = {size: statistics.median(values) for size, values in measured.items()}
    for size, values in measured.items():
        print(
            f"{what:<18} {size:>6,} files: {medians[size]:6.2f} ms median "
            f"(rounds {min(values):.2f}–{max(values):.2f})"
        )
    ratio = medians[SIZES[-1]] / medians[SIZES[0]]
    print(f"{what:<18} ratio {SIZES[-1]:,}/{SIZES[0]}: {ratio:.2f}  (target < 1.2)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rounds", type=int, default=5, help="alternating rounds (>= 5)")
    parser.add_argument("--requests", type=int, default=200, help="requests per size per round")
    args = parser.parse_args()
    rng = random.Random(7)

    with tempfile.TemporaryDirectory(prefix="tracesets-bench-") as tmp:
        workdir = Path(tmp)
        port = free_port()
        with running(
            service_argv(port, workdir / "service"),
            ready_url=f"http://{LOOPBACK}:{port}/healthz",
            log=workdir / "service.log",
            env={"TRACESETS_BOOTSTRAP_TOKEN": TOKEN},
        ):
            conn = Connection(port)
            made = {size: create(conn, size) for size in SIZES}
            print(
                f"per-file latency: {args.rounds} rounds x {args.requests} requests per size, "
                "one keep-alive connection, SQLite + local files"
            )

            def put(size: int) -> Callable[[], object]:
                targets = made[size][1]
                return lambda: conn.request("PUT", rng.choice(targets), DATA)

            puts = alternate({s: put(s) for s in SIZES}, args.rounds, args.requests, "PUT")
            for traceset_id, targets in made.values():
                for target in targets:  # every file arrives, then the traceset completes
                    conn.request("PUT", target, DATA)
                conn.json("POST", f"/api/v1/tracesets/{traceset_id}/complete", {}, 200)

            def location(size: int) -> str:
                traceset_id = made[size][0]
                name = quote(f"rank-{rng.randrange(size)}.json")
                found = conn.request(
                    "GET", f"/api/v1/tracesets/{traceset_id}/files/{name}", headers=AUTH, expect=307
                )
                return path_of(found.headers["location"])

            def redirect(size: int) -> Callable[[], object]:
                return lambda: location(size)

            signed = {size: [location(size) for _ in range(200)] for size in SIZES}

            def get(size: int) -> Callable[[], object]:
                return lambda: conn.request("GET", rng.choice(signed[size]))

            redirects = alternate(
                {s: redirect(s) for s in SIZES}, args.rounds, args.requests, "redirect"
            )
            gets = alternate({s: get(s) for s in SIZES}, args.rounds, args.requests, "signed GET")

    report("PUT", puts)
    report("files/{name} 307", redirects)
    report("signed GET", gets)


if __name__ == "__main__":
    main()
