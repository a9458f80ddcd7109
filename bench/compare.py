"""The time to compare two 1,024-rank tracesets from what their inspections stored.

Builds both tracesets' stored figures directly in a fresh SQLite database through the
project's own statements (``queries.finish_inspection``, ``comparing.record_operators``):
each rank's figures as ``analysis.report.rank_json`` makes them, with 20 top kernels and
an ``other`` row, and 4,096 operator rows a traceset. Then times the service's
``compare`` (what GET …/compare/{baselineId} answers) and prints the median of 5 and
their spread.

    .venv/bin/python bench/compare.py [--ranks 1024] [--rounds 5]
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
from sqlalchemy import Connection, insert, select

from tracesets.analysis.operators import OperatorRow
from tracesets.api.blobs import BLOB_ROUTE
from tracesets.db import comparing, queries
from tracesets.db.engine import Database, sqlite_url
from tracesets.db.tables import tracesets
from tracesets.performance import of_ranks
from tracesets.service.catalog import TracesetService
from tracesets.storage.local import LocalBlobStore
from tracesets.storage.signing import URLSigner

NOW = datetime(2026, 12, 8, tzinfo=UTC)


def rank_figures(rank: int, rng: random.Random, slower: float) -> dict[str, Any]:
    kernels = [
        {"name": f"void kernel_{k}<float, 128>(float const*, float*)", "type": "COMPUTATION",
         "count": 400, "sumUs": rng.uniform(1e4, 1e5) * slower, "meanUs": 1.0, "minUs": 0.5,
         "maxUs": 9.0, "stddevUs": 0.3}
        for k in range(rng.randrange(0, 5), 40, 2)
    ]  # fmt: skip
    kernels.append({**kernels[0], "name": "other", "type": "OTHER"})
    kernel_us = 1e6 * slower
    idle = rng.uniform(0.05, 0.15) * kernel_us
    return {
        "rank": rank, "file": f"rank-{rank}.json.gz", "member": None, "events": 500_000,
        "steps": {"count": 10, "minUs": 9e4, "medianUs": 1e5 * slower, "maxUs": 1.1e5},
        "gpu": {"kernelUs": kernel_us, "idleUs": idle, "computeUs": kernel_us - idle,
                "nonComputeUs": 0.0, "idlePct": round(100 * idle / kernel_us, 2),
                "computePct": round(100 - 100 * idle / kernel_us, 2), "nonComputePct": 0.0,
                "communicationUs": 0.0, "memoryUs": 0.0, "otherUs": 0.0, "overlapPct": 50.0,
                "kernels": 8000},
        "kernelTypes": [], "topKernels": kernels, "idleBreakdown": [], "launchStats": None,
        "collectives": [], "straggler": False, "problem": None,
    }  # fmt: skip


def store(conn: Connection, traceset_id: str, ranks: int, slower: float, seed: int) -> None:
    rng = random.Random(seed)
    conn.execute(
        insert(tracesets).values(
            id=traceset_id, workspace="w", name=traceset_id, status="ready",
            created_at=NOW, updated_at=NOW, rank_count=ranks,
        )
    )  # fmt: skip
    seq = conn.execute(select(tracesets.c.seq).where(tracesets.c.id == traceset_id)).scalar_one()
    queries.queue_inspection(conn, seq=seq)
    figures = [rank_figures(rank, rng, slower) for rank in range(ranks)]
    queries.finish_inspection(
        conn, seq=seq, status="done", ok=True, result=b"{}", now=NOW,
        ranks=[orjson.dumps(f) for f in figures], performance=of_ranks(figures),
    )  # fmt: skip
    rows = [
        OperatorRow(f"aten::op_{i}", 1000, rng.uniform(1, 1e6) * slower, 10, 100.0)
        for i in range(4096)
    ]
    comparing.record_operators(conn, seq=seq, rows=rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=1024)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tracesets-compare-") as folder:
        db = Database(sqlite_url(Path(folder)))
        db.migrate()
        ours, theirs = "a" * 32, "b" * 32
        with db.write() as conn:
            store(conn, ours, args.ranks, 1.07, seed=1)
            store(conn, theirs, args.ranks, 1.0, seed=2)
        signer = URLSigner(b"s" * 32)
        service = TracesetService(
            db, LocalBlobStore(Path(folder) / "files", signer, url_path=BLOB_ROUTE)
        )
        times = []
        for _ in range(args.rounds):
            start = time.perf_counter()
            answer = service.compare("w", ours, theirs)
            times.append(time.perf_counter() - start)
        size = len(orjson.dumps(answer))
        db.dispose()
    print(f"compare of two {args.ranks:,}-rank tracesets ({size:,} bytes of answer)")
    print(
        f"median {statistics.median(times) * 1000:.1f} ms over {args.rounds} "
        f"(min {min(times) * 1000:.1f}, max {max(times) * 1000:.1f} ms)"
    )


if __name__ == "__main__":
    main()
