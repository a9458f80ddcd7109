"""PyTorch profiler (Kineto) traces written the way PyTorch writes them, for tests and bench.

Two writers exist in the wild, and the real traces in ``tests/data/traces`` show both:

- Kineto's own ``ChromeTraceLogger`` (``libkineto/src/output_json.cpp``): pretty, one
  member per line, events as ``{`` / ``"ph": "X", ...`` / ``},`` blocks; the header
  holds ``schemaVersion``, ``deviceProperties``, the metadata PyTorch adds (its
  ``distributedInfo``) and ``"traceEvents": [``; the end holds ``traceName``,
  ``displayTimeUnit``, ``baseTimeNanoseconds``. On-demand traces (dynolog) get
  ``distributedInfo`` from Kineto itself, after ``traceEvents``, built from the
  collectives it saw: ``pg_count`` counts those groups, ``ranks`` is a string.
- ``json.dumps`` of the loaded trace (tools that rewrite traces, like Holistic Trace
  Analysis): one compact line, ``{"schemaVersion": 1, ..., "traceEvents": [...]}``.

Events vary like real ones (timestamps, durations, ids, shapes), so they compress 10 to
20 times, as real traces do, not thousands of times like repeated text.
"""

from __future__ import annotations

import gzip
import json
import random
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

Layout = Literal["header", "tail", "none"]

OPS = (
    "aten::zeros", "aten::empty", "aten::zero_", "aten::fill_", "aten::add", "aten::mul",
    "aten::mm", "aten::addmm", "aten::linear", "aten::matmul", "aten::softmax",
    "aten::layer_norm", "aten::gelu", "aten::copy_", "aten::to", "aten::view", "aten::cat",
    "aten::sum", "record_param_comms", "nccl:all_reduce", "Optimizer.step#AdamW.step",
    "autograd::engine::evaluate_function: MmBackward0",
)  # fmt: skip
KERNELS = (
    "ampere_sgemm_128x64_tn",
    "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float> >",
    "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)",
    "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float> >",
)
DEVICE = {
    "name": "NVIDIA A100-SXM4-80GB",
    "totalGlobalMem": 85029158912,
    "computeMajor": 8,
    "computeMinor": 0,
    "maxThreadsPerBlock": 1024,
    "maxThreadsPerMultiprocessor": 2048,
    "regsPerBlock": 65536,
    "warpSize": 32,
    "sharedMemPerBlock": 49152,
    "numSms": 108,
}


def distributed_info(
    rank: int | None, world_size: int | None, *, ranks_as_string: bool = False, pg_count: int = 1
) -> dict[str, Any]:
    """``distributedInfo`` as ``torch.profiler`` builds it (or Kineto, with string ranks)."""
    info: dict[str, Any] = {"backend": "nccl"}
    if rank is not None:
        info["rank"] = rank
    if world_size is not None:
        members = list(range(world_size))
        info["world_size"] = world_size
        info["pg_count"] = pg_count
        info["pg_config"] = [
            {
                "pg_name": "0",
                "pg_desc": "default_pg",
                "backend_config": "cuda:nccl",
                "pg_size": world_size,
                "ranks": str(members) if ranks_as_string else members,
            }
        ]
    info["nccl_version"] = "unknown" if ranks_as_string else "2.21.5"
    return info


def _event(rng: random.Random, index: int, ts: int, pid: int) -> dict[str, Any]:
    if rng.random() < 0.3:
        return {
            "ph": "X",
            "cat": "kernel",
            "name": rng.choice(KERNELS),
            "pid": 0,
            "tid": rng.choice((7, 20, 24)),
            "ts": ts,
            "dur": rng.randint(2, 4000),
            "args": {
                "External id": index,
                "queued": 0,
                "device": 0,
                "context": 1,
                "stream": 7,
                "correlation": index * 3 + rng.randint(0, 2),
                "registers per thread": rng.choice((32, 64, 128, 255)),
                "grid": [rng.randint(1, 4096), 1, 1],
                "block": [rng.choice((128, 256, 512)), 1, 1],
            },
        }
    dims = [[rng.choice((1, 8, 64, 512, 1024, 4096)), rng.choice((768, 1024, 4096))]]
    return {
        "ph": "X",
        "cat": "cpu_op",
        "name": rng.choice(OPS),
        "pid": pid,
        "tid": pid,
        "ts": ts,
        "dur": rng.randint(0, 900),
        "args": {
            "External id": index,
            "Record function id": index + rng.randint(0, 9),
            "Sequence number": rng.randint(0, 1 << 20),
            "Fwd thread id": 1,
            "Ev Idx": index,
            "Input Dims": dims,
            "Input type": ["float"],
        },
    }


def _pretty_event(event: dict[str, Any]) -> str:
    """One event as Kineto's ChromeTraceLogger prints it."""
    head = ", ".join(
        f"{json.dumps(key)}: {json.dumps(event[key])}"
        for key in ("ph", "cat", "name", "pid", "tid")
    )
    args = ", ".join(f"{json.dumps(k)}: {json.dumps(v)}" for k, v in event["args"].items())
    return (
        f'\n  {{\n    {head},\n    "ts": {event["ts"]}, "dur": {event["dur"]},'
        f'\n    "args": {{\n      {args}\n    }}\n  }}'
    )


def kineto_chunks(
    rank: int | None = 0,
    world_size: int | None = 8,
    *,
    layout: Layout = "header",
    pretty: bool = True,
    events: int = 200,
    size: int | None = None,
    info: dict[str, Any] | None = None,
    seed: int = 0,
) -> Iterator[bytes]:
    """A trace in pieces: ``events`` events, or as many as reach ``size`` bytes.

    ``layout``: ``distributedInfo`` before ``traceEvents`` (``header``, as torch.profiler
    writes it), after (``tail``, as Kineto's on-demand traces do), or absent (``none``).
    ``info`` replaces the ``distributedInfo`` value.
    """
    rng = random.Random(seed)
    pid = 1000 + (rank or 0)
    if info is None:
        info = distributed_info(rank, world_size, ranks_as_string=layout == "tail")
    info_text = json.dumps(info)
    devices = [{"id": n, **DEVICE} for n in range(8)]
    separator = ",\n  " if pretty else ", "
    if pretty:
        device_text = ",".join("\n    {\n      " + json.dumps(d)[1:-1] + "\n    }" for d in devices)
        start = f'\n{{\n  "schemaVersion": 1,\n  "deviceProperties": [{device_text}\n  ],'
        if layout == "header":
            start += f'\n  "distributedInfo": {info_text},'
        start += '\n  "traceEvents": ['
    else:
        start = '{"schemaVersion": 1, "deviceProperties": ' + json.dumps(devices) + ", "
        if layout == "header":
            start += f'"distributedInfo": {info_text}, '
        start += '"traceEvents": ['
    yield start.encode()

    written, ts = len(start), 1_700_000_000_000_000
    index = 0
    while (size is None and index < events) or (size is not None and written < size - 4096):
        event = _event(rng, index, ts, pid)
        text = _pretty_event(event) if pretty else json.dumps(event)
        piece = (text if index == 0 else ("," + text if pretty else ", " + text)).encode()
        written += len(piece)
        yield piece
        ts += rng.randint(1, 40)
        index += 1

    end_marker = {"name": "Record Window End", "ph": "i", "s": "g", "pid": "", "tid": "", "ts": ts}
    tail = ("," if index else "") + (
        _pretty_marker(end_marker) if pretty else (" " + json.dumps(end_marker))
    )
    tail += "\n  ]," if pretty else "],"
    members = []
    if layout == "tail":
        members.append(f'"distributedInfo": {info_text}')
    members += [
        f'"traceName": "/tmp/libkineto_activities_{pid}.json"',
        '"displayTimeUnit": "ms"',
        '"baseTimeNanoseconds": 1700000000000000000',
    ]
    if pretty:
        tail += "".join(f"\n  {m}," for m in members)[:-1] + "\n}\n"
    else:
        tail += " " + separator.join(members) + "}"
    yield tail.encode()


def _pretty_marker(marker: dict[str, Any]) -> str:
    return (
        '\n  {\n    "name": "Record Window End", "ph": "i", "s": "g",'
        f'\n    "pid": "", "tid": "", "ts": {marker["ts"]}\n  }}'
    )


def kineto_trace(rank: int | None = 0, world_size: int | None = 8, **options: Any) -> bytes:
    """A whole trace in memory (small ones: ``events`` defaults to 200)."""
    return b"".join(kineto_chunks(rank, world_size, **options))


def gzipped(data: bytes) -> bytes:
    return gzip.compress(data, compresslevel=6, mtime=0)


def write_trace(
    path: Path,
    rank: int | None = 0,
    world_size: int | None = 8,
    *,
    compress: bool = False,
    **options: Any,
) -> Path:
    """Write a trace to ``path`` piece by piece (gzip when ``compress``); big ones stay cheap."""
    with path.open("wb") as raw:
        if compress:
            with gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=1, mtime=0) as out:
                for chunk in kineto_chunks(rank, world_size, **options):
                    out.write(chunk)
        else:
            for chunk in kineto_chunks(rank, world_size, **options):
                raw.write(chunk)
    return path


def write_big_gzip(
    path: Path,
    rank: int | None = 0,
    world_size: int | None = 8,
    *,
    compressed_size: int,
    layout: Layout = "tail",
    pretty: bool = True,
) -> int:
    """A gzip trace of about ``compressed_size`` bytes at ``path``; returns its size once
    decompressed. Written fast: one 4 MiB block of events, repeated. Deflate looks back
    32 KiB only, so the repeats compress like fresh events (about 10 times), and the
    file is one gzip member, as ``gzip.open`` writes."""
    pieces = list(kineto_chunks(rank, world_size, layout=layout, pretty=pretty, size=4 << 20))
    start, events, end = pieces[0], b"".join(pieces[1:-1]), pieces[-1]
    blocks = max(1, round(compressed_size / len(zlib.compress(events, 1))))
    compressor = zlib.compressobj(1, zlib.DEFLATED, 31)
    with path.open("wb") as out:
        out.write(compressor.compress(start))
        out.write(compressor.compress(events))
        for _ in range(blocks - 1):
            out.write(compressor.compress(b"," + events))
        out.write(compressor.compress(end))
        out.write(compressor.flush())
    return len(start) + len(events) + (blocks - 1) * (1 + len(events)) + len(end)
