"""Inspection throughput with 1, 2 and 3 ``tracesets worker`` processes, in files a second.

A service that leaves inspection to workers (``TRACESETS_INSPECT_IN_SERVICE=0``) gets,
for each worker count, a fresh traceset of ``--ranks`` small rank traces (one rank of a
tp-by-dp training run each, ``tests/analysis/run_writer.py``, about 25 KB). Its files are
uploaded first; then the workers start, and once each has said it is inspecting, the
traceset is completed, which queues its inspection. The time is from ``complete`` to
the inspection's ``done`` as stored (the checks across ranks included), so process
start-up is not counted; a worker polls the queue every 2 s when idle, which is counted.

Backends as the tests choose them: SQLite and a local folder by default; under
``scripts/with-scaled-services`` PostgreSQL and S3 (moto, on loopback).

    .venv/bin/python bench/workers.py [--ranks 500] [--workers 1 2 3]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.analysis.run_writer import Run, rank_trace
from tests.flows import request_urls, send
from tests.workers import Worker, client, file_rows, inspection_state, wait_for, workers_service


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ranks", type=int, default=500, help="rank files (a multiple of 4)")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 3])
    args = parser.parse_args()
    run = Run(tp=4, dp=args.ranks // 4, steps=3, kernels_per_step=4)
    files = {f"rank-{rank}.json": rank_trace(run, rank) for rank in range(run.world)}
    total = sum(len(data) for data in files.values())
    backend = (
        "PostgreSQL + S3" if os.environ.get("TRACESETS_TEST_STORAGE_URL") else "SQLite + local"
    )
    print(f"{len(files)} rank files, {total / len(files) / 1000:.0f} KB each; {backend}; "
          f"{os.cpu_count()} CPUs")  # fmt: skip
    with tempfile.TemporaryDirectory() as scratch:
        service = workers_service(Path(scratch) / "service")
        service.start()
        try:
            with client(service) as api:
                for count in args.workers:
                    created = request_urls(api, files, {"shape": {"rankCount": run.world}})
                    for target in created["uploads"]:
                        send(target, files[target["name"]])
                    workers = [Worker(service, f"{count}-{n}") for n in range(count)]
                    for worker in workers:
                        assert worker.owner
                    traceset_id = created["tracesetId"]
                    started = time.perf_counter()
                    done = api.post(f"/api/v1/tracesets/{traceset_id}/complete")
                    assert done.status_code == 200, done.text
                    wait_for(
                        lambda: inspection_state(service, traceset_id)[0] == "done",  # noqa: B023
                        what="the inspection",
                        timeout=3600,
                    )
                    seconds = time.perf_counter() - started
                    owners = [owner for _, _, owner in file_rows(service, traceset_id).values()]
                    shares = sorted((owners.count(w.owner) for w in workers), reverse=True)
                    for worker in workers:
                        worker.stop()
                    print(
                        f"{count} worker{'s' if count > 1 else ' '}: {seconds:6.1f} s, "
                        f"{len(files) / seconds:6.1f} files/s, files per worker {shares}",
                        flush=True,
                    )
        finally:
            service.stop()


if __name__ == "__main__":
    main()
