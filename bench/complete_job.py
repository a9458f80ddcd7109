"""``complete`` of a job of many rank files: this code against an earlier commit's, same run.

A 100,000-rank job's traceset is declared (upload-url, then add-files of 4,000 files, as
the Python client sends them) on SQLite and a local store, its files are placed where
the store keeps received bytes (each rank's own few bytes, under its key and digest), and
``complete`` is timed: every file checked in the store, the traceset made ready in one
transaction, the superseded uploads dropped. In a fresh process for each side, the call
alone timed (wall and CPU), rounds alternating which side goes first.

    .venv/bin/python bench/complete_job.py --base-src DIR/src [--ranks 100000] [--rounds 5]

``DIR/src`` is ``git archive REV src | tar -x -C DIR``'s.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Final

from servers import compiled

BATCH: Final = 4_000  # files a request, as the Python client declares them


def rank_bytes(rank: int, ranks: int) -> bytes:
    return b'{"distributedInfo":{"rank":%d,"world_size":%d},"traceEvents":[]}' % (rank, ranks)


def one(ranks: int) -> dict[str, float]:
    """(In a subprocess, under either code) declare, place, then time ``complete``."""
    from tracesets.api.blobs import BLOB_ROUTE
    from tracesets.db.engine import Database, sqlite_url
    from tracesets.service.catalog import TracesetService
    from tracesets.storage.local import LocalBlobStore
    from tracesets.storage.signing import URLSigner

    root = Path(tempfile.mkdtemp(prefix="complete-job-"))
    db = Database(sqlite_url(root))
    db.migrate()
    store = LocalBlobStore(root / "files", URLSigner(b"b" * 32), url_path=BLOB_ROUTE)
    service = TracesetService(db, store)
    datas = [rank_bytes(rank, ranks) for rank in range(ranks)]
    files = [
        {
            "name": f"rank{rank}.trace.json",
            "size": len(data),
            "role": "primary",
            "sha256": hashlib.sha256(data).hexdigest(),
        }
        for rank, data in enumerate(datas)
    ]
    metadata = {"shape": {"rankCount": ranks}}
    first = {"name": "job", "files": files[:BATCH], "workloadMetadata": metadata}
    traceset, _ = service.create_upload("ws", json.dumps(first).encode(), "http://bench")
    for start in range(BATCH, ranks, BATCH):
        more = json.dumps({"files": files[start : start + BATCH]}).encode()
        service.add_files("ws", traceset.id, more, "http://bench")
    folder = store.blobs / traceset.id
    folder.mkdir(parents=True)
    for idx, (data, file) in enumerate(zip(datas, files, strict=True)):
        (folder / f"{idx}.{file['sha256']}").write_bytes(data)
    started, cpu = time.perf_counter(), time.process_time()
    done = service.complete("ws", traceset.id)
    figures = {"seconds": time.perf_counter() - started, "cpu": time.process_time() - cpu}
    assert done.status == "ready", done.status
    return figures


def measured(ranks: int, python_path: str) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": python_path}
    argv = [sys.executable, __file__, "--one", "--ranks", str(ranks)]
    out = subprocess.run(argv, env=env, capture_output=True, text=True, check=True).stdout
    figures: dict[str, float] = json.loads(out.splitlines()[-1])
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--base-src", type=Path, help="an earlier commit's src folder")
    parser.add_argument("--ranks", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(args.ranks)))
        return
    if args.base_src is None:
        parser.error("--base-src is required: the code to compare with")
    here = Path(__file__).resolve().parents[1] / "src"
    sides = {"base": str(compiled(args.base_src.resolve())), "this": str(compiled(here))}
    runs: dict[str, list[dict[str, float]]] = {side: [] for side in sides}
    print(f"complete of {args.ranks:,} rank files, SQLite + local files, {args.rounds} rounds")
    for round_ in range(args.rounds):
        order = list(sides) if round_ % 2 == 0 else list(sides)[::-1]
        for side in order:
            run = measured(args.ranks, sides[side])
            runs[side].append(run)
            print(f"  round {round_ + 1} {side:<4} {run['seconds']:6.2f} s ({run['cpu']:.2f} cpu)")
    medians = {}
    for side, figures in runs.items():
        walls = [run["seconds"] for run in figures]
        medians[side] = statistics.median(walls)
        cpu = statistics.median(run["cpu"] for run in figures)
        print(
            f"{side:<4} {medians[side]:6.2f} s median ({min(walls):.2f}-{max(walls):.2f}),"
            f" {cpu:.2f} s cpu"
        )
    print(f"ratio base/this: {medians['base'] / medians['this']:.2f}")


if __name__ == "__main__":
    main()
