"""List latency at a million tracesets: filtered pages against the unfiltered first page.

bench/list_data.py writes 1,000,000 tracesets (100,000 with --quick) straight into a
fresh database, migrated as the service migrates it; then ``tracesets serve`` (one
uvicorn worker) runs on that database and one keep-alive connection sends
``GET /api/v1/tracesets?…&limit=50`` with a bearer token, the queries taking turns in
a shuffled order each round. For each query the script prints p50 and p99 of the HTTP
latency, the p50 of the same statements run in-process (the SQL alone, without HTTP
and JSON), and the ratio of the HTTP p50 to the unfiltered page's. It also prints the
plan of each filtered statement, exactly as the service sends it.

SQLite always; PostgreSQL too with ``--postgres URL`` or when TRACESETS_TEST_DATABASE_URL
is set (scripts/with-scaled-services sets it). On PostgreSQL the script creates a scratch
database next to the one named (the role needs CREATEDB) and drops it at the end.

    .venv/bin/python bench/list_filter.py [--quick] [--postgres URL]
"""

from __future__ import annotations

import argparse
import dataclasses
import http.client
import json
import os
import random
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlencode

from list_data import FAMILIES, RETIRED, Generated, generate
from scratch_postgres import default_url, scratch_database
from servers import LOOPBACK, free_port, running, service_argv
from sqlalchemy import event

from tracesets.db import listing
from tracesets.db.engine import Database
from tracesets.service import tokens
from tracesets.vocabulary import ListFilter

#: The per-token rate limit (100/s by default) would answer most of the load 429:
#: the bench measures the requests, not the limiter.

WORKSPACE: Final = "team-llm"  # the largest workspace of list_data.WORKSPACES
LIMIT: Final = 50


@dataclass(frozen=True, slots=True)
class Query:
    label: str
    where: ListFilter

    @property
    def params(self) -> dict[str, str | int]:
        return {k: v for k, v in dataclasses.asdict(self.where).items() if v is not None}

    def path(self) -> str:
        return "/api/v1/tracesets?" + urlencode({**self.params, "limit": LIMIT})

    def matches(self, item: dict[str, Any]) -> bool:
        metadata = item["workloadMetadata"] or {}
        found = {
            "status": item["status"],
            "rank_count": item["rankCountDerived"],
            "workload_family": metadata.get("workload_family"),
            "workload_name": metadata.get("workload_name"),
            "global_batch_size": metadata.get("shape", {}).get("global_batch_size"),
        }
        return all(found[name] == value for name, value in self.params.items())


def choose_queries(data: Generated) -> list[Query]:
    """The unfiltered page, then filters of common and rare values of the workspace's data."""
    families = sorted(data.families[WORKSPACE].items(), key=lambda kv: kv[1], reverse=True)
    names = sorted(data.names[WORKSPACE].items(), key=lambda kv: kv[1])
    retired_names = {FAMILIES[rank] for rank in RETIRED}
    in_use = [kv for kv in families if kv[0] not in retired_names]
    common, rare = in_use[0], in_use[-1]
    retired = next(kv for kv in families if kv[0] in retired_names)
    median_name = names[len(names) // 2]
    share = data.per_workspace[WORKSPACE]

    def pct(n: int) -> str:
        return f"{100 * n / share:.2g} %"

    return [
        Query("unfiltered", ListFilter()),
        Query(f"family, common ({pct(common[1])})", ListFilter(workload_family=common[0])),
        Query(f"family, rare ({pct(rare[1])})", ListFilter(workload_family=rare[0])),
        Query(
            f"family, retired ({pct(retired[1])}, all old)", ListFilter(workload_family=retired[0])
        ),
        Query("family common + ready", ListFilter(workload_family=common[0], status="ready")),
        Query("family rare + promoted", ListFilter(workload_family=rare[0], status="promoted")),
        Query(f"name ({pct(median_name[1])})", ListFilter(workload_name=median_name[0])),
        Query("global_batch_size", ListFilter(global_batch_size=4096)),
        Query("rank_count", ListFilter(rank_count=256)),
    ]


def percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


class Statements:
    """The SQL the service runs for a query, caught as it goes to the driver."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.caught: list[tuple[str, Any]] = []
        event.listen(db.engine, "before_cursor_execute", self._catch)

    def _catch(self, _conn: Any, _cursor: Any, statement: str, params: Any, *_: Any) -> None:
        self.caught.append((statement, params))

    def run(self, query: Query) -> list[Any]:
        with self.db.read() as conn:
            return listing.list_tracesets(
                conn, workspace=WORKSPACE, where=query.where, limit=LIMIT + 1, before_seq=None
            )

    def plan(self, query: Query) -> list[str]:
        self.caught.clear()
        self.run(query)
        statement, params = next((s, p) for s, p in self.caught if "FROM tracesets" in s)
        with self.db.read() as conn:
            if self.db.is_sqlite:
                rows = conn.exec_driver_sql("EXPLAIN QUERY PLAN " + statement, params).all()
                return [row[3] for row in rows]
            explain = "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, SUMMARY ON) "
            rows = conn.exec_driver_sql(explain + statement, params).all()
            return [row[0] for row in rows]

    def sql_p50(self, query: Query, rounds: int) -> float:
        samples = []
        for _ in range(rounds):
            started = time.perf_counter()
            self.run(query)
            samples.append(time.perf_counter() - started)
        return statistics.median(samples)


def measure_http(
    port: int, token: str, chosen: list[Query], rounds: int, warmup: int
) -> dict[str, list[float]]:
    connection = http.client.HTTPConnection(LOOPBACK, port, timeout=60)
    headers = {"Authorization": f"Bearer {token}"}
    samples: dict[str, list[float]] = {q.label: [] for q in chosen}
    order = list(chosen)
    shuffle = random.Random(3)
    try:
        for query in chosen:  # the answers are right before anything is timed
            connection.request("GET", query.path(), headers=headers)
            answer = connection.getresponse()
            page = json.loads(answer.read())
            items = page.get("items", [])
            if answer.status != 200 or not items or not all(query.matches(i) for i in items):
                raise RuntimeError(
                    f"{query.label}: {answer.status}, wrong or no items: {page!r:.300}"
                )
        for round_ in range(warmup + rounds):
            shuffle.shuffle(order)
            for query in order:
                started = time.perf_counter()
                connection.request("GET", query.path(), headers=headers)
                answer = connection.getresponse()
                answer.read()
                took = time.perf_counter() - started
                if answer.status != 200:
                    raise RuntimeError(f"{query.label} answered {answer.status}")
                if round_ >= warmup:
                    samples[query.label].append(took)
    finally:
        connection.close()
    return samples


def bench_engine(label: str, url: str, workdir: Path, args: argparse.Namespace) -> None:
    print(f"\n== {label}: generating {args.count:,} tracesets …", flush=True)
    db = Database(url)
    db.migrate()
    data = generate(db, args.count)
    print(
        f"   {data.tracesets:,} tracesets and {data.files:,} files in {data.seconds:.0f} s; "
        f"workspace {WORKSPACE} holds {data.per_workspace[WORKSPACE]:,}",
        flush=True,
    )
    token = tokens.create(db, workspace=WORKSPACE, name="list bench")
    chosen = choose_queries(data)
    statements = Statements(db)
    for query in chosen[1:]:
        print(f"   plan of {query.label} {query.params}:")
        for line in statements.plan(query):
            print(f"      {line}")
    sql = {q.label: statements.sql_p50(q, max(10, args.rounds // 4)) for q in chosen}
    db.dispose()

    port = free_port()
    with running(
        service_argv(port, workdir),
        ready_url=f"http://{LOOPBACK}:{port}/healthz",
        log=workdir / f"service-{label}.log",
        env={"DATABASE_URL": url},
    ):
        samples = measure_http(port, token, chosen, args.rounds, warmup=5)

    base = statistics.median(samples["unfiltered"])
    print(
        f"   {args.rounds} requests per query, limit={LIMIT}, one keep-alive connection; "
        "ms (ratio = p50 / unfiltered p50)"
    )
    print(f"   {'query':<32} {'p50':>7} {'p99':>7} {'sql p50':>8} {'ratio':>6}")
    for query in chosen:
        times = samples[query.label]
        p50, p99 = statistics.median(times), percentile(times, 0.99)
        print(
            f"   {query.label:<32} {p50 * 1e3:7.2f} {p99 * 1e3:7.2f} "
            f"{sql[query.label] * 1e3:8.2f} {p50 / base:6.2f}"
        )
    worst = max(statistics.median(t) for t in samples.values())
    print(f"   {label}: slowest p50 {worst * 1e3:.2f} ms (target < 20 ms at 1,000,000 tracesets)")


def main() -> None:
    parser = argparse.ArgumentParser(description="List latency, filtered vs unfiltered")
    parser.add_argument("--quick", action="store_true", help="100,000 tracesets, 40 rounds")
    parser.add_argument("--count", type=int, help="tracesets to generate (default 1,000,000)")
    parser.add_argument("--rounds", type=int, help="timed requests per query (default 300)")
    parser.add_argument(
        "--postgres",
        metavar="URL",
        default=default_url(),
        help="also PostgreSQL (default: TRACESETS_TEST_DATABASE_URL if set)",
    )
    parser.add_argument("--no-sqlite", action="store_true", help="PostgreSQL only")
    args = parser.parse_args()
    args.count = args.count or (100_000 if args.quick else 1_000_000)
    args.rounds = args.rounds or (40 if args.quick else 300)
    print(f"list-filter: {args.count:,} tracesets, {os.cpu_count()} CPUs")

    with tempfile.TemporaryDirectory(prefix="tracesets-bench-") as tmp:
        workdir = Path(tmp)
        if not args.no_sqlite:
            sqlite_dir = workdir / "sqlite"
            sqlite_dir.mkdir()
            bench_engine("SQLite", f"sqlite:///{sqlite_dir / 'tracesets.db'}", sqlite_dir, args)
        if args.postgres:
            postgres_dir = workdir / "postgres"
            postgres_dir.mkdir()
            with scratch_database(args.postgres, "list") as url:
                bench_engine("PostgreSQL", url, postgres_dir, args)
        elif args.no_sqlite:
            raise SystemExit("--no-sqlite needs --postgres URL or TRACESETS_TEST_DATABASE_URL")


if __name__ == "__main__":
    main()
