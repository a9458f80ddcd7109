"""Kineto traces of a whole training run, rank by rank, as PyTorch writes them.

Each step of each rank is what a real tensor- and data-parallel step leaves in a trace:
a ``ProfilerStep#N`` CPU op around CPU ops that launch kernels (``cudaLaunchKernel``
with a correlation id, the kernel on its stream with the same id), tensor-parallel
all-reduces on the NCCL stream overlapping the next matmuls, a host-to-device copy, and
one data-parallel all-reduce of the gradients; each collective is also recorded on the
CPU as ``record_param_comms`` with its process group, as PyTorch does. Process groups
are the default one, one tensor-parallel group per block of ``tp`` ranks and one
data-parallel group per position in the block, named as ``torch.distributed`` numbers
them, and listed in ``distributedInfo.pg_config``.

Knobs make runs with known defects: ``slow`` stretches the steps of some ranks (a
straggler), ``skip`` drops one collective of a rank (a desync), ``cpu_only`` writes a
Gloo run without GPU events. Durations vary with the seed like real ones, so traces
compress as real ones do.
"""

from __future__ import annotations

import gzip
import json
import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

COMPUTE_KERNELS = (
    "ampere_sgemm_128x64_tn",
    "sm80_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize96x64x32_stage3_warpsize2x2x1",
    "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl>",
    "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float> >",
)
ALL_REDUCE = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)"
MEMCPY = "Memcpy HtoD (Pageable -> Device)"


@dataclass(frozen=True)
class Run:
    """The shape of a run: ``tp`` times ``dp`` ranks, and the defects it has."""

    tp: int = 2
    dp: int = 2
    steps: int = 4
    kernels_per_step: int = 12
    slow: dict[int, float] = field(default_factory=dict)  # rank: step-time factor
    skip: dict[int, int] = field(default_factory=dict)  # rank: step whose dp all-reduce is lost
    cpu_only: bool = False
    fractional: bool = False  # nanosecond-resolution timestamps, as recent PyTorch writes
    seed: int = 0

    @property
    def world(self) -> int:
        return self.tp * self.dp

    def tp_group(self, rank: int) -> tuple[str, list[int]]:
        block = rank // self.tp
        return str(1 + block), [block * self.tp + i for i in range(self.tp)]

    def dp_group(self, rank: int) -> tuple[str, list[int]]:
        position = rank % self.tp
        return str(1 + self.dp + position), [d * self.tp + position for d in range(self.dp)]

    def pg_config(self, rank: int) -> list[dict[str, Any]]:
        backend = "cpu:gloo" if self.cpu_only else "cuda:nccl"
        (tp_name, tp_ranks), (dp_name, dp_ranks) = self.tp_group(rank), self.dp_group(rank)
        groups = [
            ("0", "default_pg", list(range(self.world))),
            (tp_name, "tp", tp_ranks),
            (dp_name, "dp", dp_ranks),
        ]
        return [
            {
                "pg_name": name,
                "pg_desc": desc,
                "backend_config": backend,
                "pg_size": len(ranks),
                "ranks": ranks,
            }
            for name, desc, ranks in groups
        ]


class _Rank:
    """The events of one rank, in the order Kineto writes them: each step's CPU events, then
    its GPU events."""

    def __init__(self, run: Run, rank: int) -> None:
        self.run = run
        self.rank = rank
        self.rng = random.Random(run.seed * 100_003 + rank)
        self.correlation = 1000
        self.external = 1
        self.pid = 4000 + rank

    def _time(self, value: float) -> float | int:
        return round(value, 3) if self.run.fractional else int(value)

    def _cpu(self, name: str, ts: float, dur: float, **args: Any) -> dict[str, Any]:
        self.external += 1
        return {
            "ph": "X", "cat": "cpu_op", "name": name, "pid": self.pid, "tid": self.pid,
            "ts": self._time(ts), "dur": self._time(dur),
            "args": {"External id": self.external, "Record function id": 0,
                     "Ev Idx": self.external, **args},
        }  # fmt: skip

    def _launch(
        self, name: str, kernel: str, cpu_ts: float, gpu_ts: float, dur: float, stream: int
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        self.correlation += 1
        runtime = {
            "ph": "X", "cat": "cuda_runtime", "name": name, "pid": self.pid,
            "tid": self.pid, "ts": self._time(cpu_ts), "dur": self._time(4 + self.rng.random() * 3),
            "args": {"External id": self.external, "cbid": 211, "correlation": self.correlation},
        }  # fmt: skip
        cat = "gpu_memcpy" if kernel.startswith("Memcpy") else "kernel"
        gpu = {
            "ph": "X", "cat": cat, "name": kernel, "pid": 0, "tid": stream,
            "ts": self._time(gpu_ts), "dur": self._time(dur),
            "args": {"External id": self.external, "queued": 0, "device": self.rank % 8,
                     "context": 1, "stream": stream, "correlation": self.correlation,
                     "registers per thread": self.rng.choice((32, 64, 128)),
                     "grid": [self.rng.randint(1, 4096), 1, 1], "block": [256, 1, 1]},
        }  # fmt: skip
        return runtime, gpu

    def _collective(self, group: tuple[str, list[int]], desc: str, nelems: int) -> dict[str, Any]:
        name, ranks = group
        return {
            "Collective name": "allreduce", "dtype": "Float", "In msg nelems": nelems,
            "Out msg nelems": nelems, "Group size": len(ranks), "Process Group Name": name,
            "Process Group Description": desc, "Process Group Ranks": str(ranks),
        }  # fmt: skip

    def step(self, number: int, start: float) -> tuple[list[dict[str, Any]], float]:
        """The events of step ``number`` starting at ``start``, and when the next one starts."""
        run, rng = self.run, self.rng
        factor = run.slow.get(self.rank, 1.0)
        cpu: list[dict[str, Any]] = []
        gpu: list[dict[str, Any]] = []
        t = start + 20
        gpu_t = start + 60
        for k in range(run.kernels_per_step):
            op_dur = (30 + rng.random() * 40) * factor
            cpu.append(self._cpu("aten::mm", t, op_dur, **{"Input Dims": [[1024, 4096]]}))
            if not run.cpu_only:
                dur = (150 + rng.random() * 300) * factor
                kernel = rng.choice(COMPUTE_KERNELS)
                runtime, event = self._launch("cudaLaunchKernel", kernel, t + 5, gpu_t, dur, 7)
                cpu.append(runtime)
                gpu.append(event)
            if k % 4 == 3:  # a tensor-parallel all-reduce, overlapping the next matmuls
                args = self._collective(self.run.tp_group(self.rank), "tp", 4096 * 1024)
                cpu.append(self._cpu("record_param_comms", t + op_dur, 12, **args))
                if not run.cpu_only:
                    dur = 200 + rng.random() * 200
                    runtime, event = self._launch(
                        "cudaLaunchKernel", ALL_REDUCE, t + op_dur + 3, gpu_t + 40, dur, 20
                    )
                    event["args"].update(args)
                    cpu.append(runtime)
                    gpu.append(event)
            t += op_dur + 10
            gpu_t += (150 + 300 * rng.random()) * factor + 15 + 60 * rng.random()
        if not run.cpu_only:
            runtime, event = self._launch("cudaMemcpyAsync", MEMCPY, t, gpu_t, 80, 24)
            cpu.append(runtime)
            gpu.append(event)
            gpu_t += 100
        if run.skip.get(self.rank) != number:  # the gradients' data-parallel all-reduce
            args = self._collective(self.run.dp_group(self.rank), "dp", 8192 * 1024)
            cpu.append(self._cpu("record_param_comms", t, 15, **args))
            if not run.cpu_only:
                runtime, event = self._launch(
                    "cudaLaunchKernel", ALL_REDUCE, t + 2, gpu_t, 500 + 200 * rng.random(), 20
                )
                event["args"].update(args)
                cpu.append(runtime)
                gpu.append(event)
                gpu_t += 700
        end = max(t + 30, gpu_t + 20 if not run.cpu_only else t + 30)
        cpu.insert(0, self._cpu(f"ProfilerStep#{number}", start, end - start))
        return cpu + gpu, end + 50


def rank_chunks(
    run: Run, rank: int, *, pretty: bool = False, size: int | None = None
) -> Iterator[bytes]:
    """One rank's trace in pieces: ``run.steps`` steps, or as many as reach ``size`` bytes."""
    info = {
        "backend": "gloo" if run.cpu_only else "nccl",
        "rank": rank,
        "world_size": run.world,
        "pg_count": 3,
        "pg_config": run.pg_config(rank),
    }
    yield (
        '{"schemaVersion": 1, "deviceProperties": [], "distributedInfo": '
        + json.dumps(info)
        + ', "traceEvents": ['
    ).encode()
    writer = _Rank(run, rank)
    written, start, number, first = 0, 1_700_000_000_000_000.0, 0, True
    while (size is None and number < run.steps) or (size is not None and written < size - 4096):
        events, start = writer.step(number, start)
        texts = [json.dumps(e, indent=2) if pretty else json.dumps(e) for e in events]
        piece = (("" if first else ", ") + ", ".join(texts)).encode()
        first = False
        written += len(piece)
        yield piece
        number += 1
    yield b'], "traceName": "/tmp/trace.json", "displayTimeUnit": "ms"}'


def rank_trace(run: Run, rank: int, **options: Any) -> bytes:
    return b"".join(rank_chunks(run, rank, **options))


def write_run(directory: Path, run: Run, *, compress: bool = True) -> list[Path]:
    """Every rank's trace in ``directory`` as ``rank-N.json[.gz]``, as HTA expects them."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for rank in range(run.world):
        data = rank_trace(run, rank)
        path = directory / f"rank-{rank}.json{'.gz' if compress else ''}"
        path.write_bytes(gzip.compress(data, mtime=0) if compress else data)
        paths.append(path)
    return paths


def write_rank(path: Path, run: Run, rank: int, *, size: int) -> int:
    """A rank's trace of about ``size`` bytes at ``path``, written piece by piece."""
    written = 0
    with path.open("wb") as out:
        for piece in rank_chunks(run, rank, size=size):
            out.write(piece)
            written += len(piece)
    return written
