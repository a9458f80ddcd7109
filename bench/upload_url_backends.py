"""Upload-url requests per second: the service on PostgreSQL against the service on SQLite.

Two ``tracesets serve`` processes (one uvicorn worker each, local file storage) differ
only in their database: SQLite in a fresh data folder (WAL, ``synchronous=FULL``), or
a scratch PostgreSQL database (fsync and synchronous_commit as the server has them).
Both get the same load as bench/upload_url.py (``wrk -t1 -c16`` with the same 280-byte
body, else bench/loadgen.py), in alternating rounds; the script prints the median
requests/s of each and the ratio.

PostgreSQL comes from ``--postgres URL`` or TRACESETS_TEST_DATABASE_URL (set by
scripts/with-scaled-services); the script creates a scratch database on that server
(the role needs CREATEDB) and drops it at the end.

    .venv/bin/python bench/upload_url_backends.py [--quick] [--postgres URL]
"""

from __future__ import annotations

import argparse
import os
import tempfile
from contextlib import ExitStack
from pathlib import Path

from scratch_postgres import default_url, scratch_database
from servers import LOOPBACK, free_port, running, service_argv
from sqlalchemy import create_engine
from upload_url import BODY, PATH, TOKEN, Load, alternate, check_answers_201, summary

from tracesets.db.engine import normalize_url

#: The per-token rate limit (100/s by default) would answer most of the load 429:
#: the bench measures the requests, not the limiter.


def server_version(url: str) -> str:
    engine = create_engine(normalize_url(url))
    try:
        with engine.connect() as conn:
            version = conn.exec_driver_sql("SHOW server_version").scalar_one()
            commit = conn.exec_driver_sql("SHOW synchronous_commit").scalar_one()
            fsync = conn.exec_driver_sql("SHOW fsync").scalar_one()
        return f"PostgreSQL {version} (fsync={fsync}, synchronous_commit={commit})"
    finally:
        engine.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description="Upload-url requests/s: PostgreSQL vs SQLite")
    parser.add_argument("--quick", action="store_true", help="1 round of 3 s (default 3 of 10 s)")
    parser.add_argument("--seconds", type=float, help="length of each measured run")
    parser.add_argument("--rounds", type=int, help="measured runs of each server, alternating")
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--load", choices=("auto", "wrk", "python"), default="auto")
    parser.add_argument(
        "--postgres",
        metavar="URL",
        default=default_url(),
        help="the PostgreSQL server (default: TRACESETS_TEST_DATABASE_URL)",
    )
    args = parser.parse_args()
    if not args.postgres:
        raise SystemExit("give --postgres URL, or run under scripts/with-scaled-services")
    seconds: float = args.seconds or (3.0 if args.quick else 10.0)
    rounds: int = args.rounds or (1 if args.quick else 3)
    # Both services keep their files in their data folder, whatever this shell says.
    os.environ.pop("TRACESETS_STORAGE_URL", None)

    with (
        tempfile.TemporaryDirectory(prefix="tracesets-bench-") as tmp,
        scratch_database(args.postgres, "upload_url") as postgres_url,
        ExitStack() as stack,
    ):
        workdir = Path(tmp)
        load = Load(workdir, args.connections, args.load)
        databases = {
            "sqlite": f"sqlite:///{workdir / 'sqlite' / 'tracesets.db'}",
            "postgres": postgres_url,
        }
        targets = {}
        for name, url in databases.items():
            port = free_port()
            process = stack.enter_context(
                running(
                    service_argv(port, workdir / name),
                    ready_url=f"http://{LOOPBACK}:{port}/healthz",
                    log=workdir / f"{name}.log",
                    env={"TRACESETS_BOOTSTRAP_TOKEN": TOKEN, "DATABASE_URL": url},
                )
            )
            targets[name] = (f"http://{LOOPBACK}:{port}{PATH}", process.pid)
        for url, _ in targets.values():
            check_answers_201(url)

        print(
            f"upload-url backends: {load.name}, {args.connections} connections, {rounds} x "
            f"{seconds:g} s per server after a {min(seconds, 3.0):g} s warm-up, "
            f"{os.cpu_count()} CPUs, {len(BODY)}-byte body; {server_version(postgres_url)}"
        )
        measured = alternate(load, targets, rounds, seconds)

    sqlite, _ = summary("sqlite", measured["sqlite"])
    postgres, _ = summary("postgres", measured["postgres"])
    print(f"ratio postgres/sqlite: {postgres / sqlite:.2f}")


if __name__ == "__main__":
    main()
