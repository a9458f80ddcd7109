"""The PyTorch profiler's hook: every rank of a job sends its trace into one traceset.

    from tracesets.torch import trace_handler

    handler = trace_handler(name="llama-8b pretrain")
    with torch.profiler.profile(schedule=..., on_trace_ready=handler) as prof:
        for batch in data:
            train_step(batch)
            prof.step()
    handler.wait()  # before the process exits: the upload runs on a thread of its own

Each rank exports its trace (gzip) and hands it to a thread of its own that adds it to
the job's traceset and uploads it, so training goes on while the bytes move. The ranks
reach the same traceset without talking through anything but what they already share:

- with ``torch.distributed`` initialized, rank 0 hands every rank its job key and its own
  trace's name, size and sha256 in one broadcast at the first ``on_trace_ready`` (all
  ranks reach it at the same step, as profiler schedules are alike); every rank then
  sends upload-url a body they all build alike, declaring rank 0's trace, with the job
  key as Idempotency-Key: the first request creates the traceset, the others get it;
- without it, the job key comes from ``job_key=``, ``TORCHELASTIC_RUN_ID`` or
  ``SLURM_JOB_ID``, the rank and world size from ``rank=``/``world_size=`` or ``RANK``/
  ``WORLD_SIZE``, and the traceset is created with ``job.json``, a file every rank
  builds alike.

The rank count is the world size. The last rank whose trace arrives completes the
traceset; a rank that dies leaves it pending with the others' traces kept, and
``tracesets show`` names the ranks missing. torch is imported only when a handler is made.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import tempfile
import threading
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from tracesets import jsontext
from tracesets.client.job import RankUpload, upload_rank
from tracesets.client.sync import Client
from tracesets.jobs import FirstFile, Job, JobError, job_key_from_environment, rank_file_name

log = logging.getLogger("tracesets.torch")
_TRACE_SUFFIX = ".pt.trace.json.gz"
_BROADCAST_BYTES = 4096


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        while chunk := stream.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


class TraceHandler:
    """``on_trace_ready`` of ``torch.profiler.profile``; uploads the rank's first trace."""

    def __init__(
        self,
        *,
        job_key: str | None,
        rank: int | None,
        world_size: int | None,
        parallelism: Mapping[str, int] | None,
        name: str | None,
        client: Callable[[], Client],
    ) -> None:
        import torch.distributed as dist  # lazily: tracesets needs no torch of its own

        self._distributed = dist.is_available() and dist.is_initialized()
        if self._distributed:
            rank, world_size = dist.get_rank(), dist.get_world_size()
        else:
            rank = rank if rank is not None else int(os.environ.get("RANK", "0"))
            world_size = (
                world_size if world_size is not None else int(os.environ.get("WORLD_SIZE", "1"))
            )
            job_key = job_key or job_key_from_environment()
        self.rank, self.world_size = rank, world_size
        self._key = job_key
        # Built now, so a job described wrongly is refused before training starts.
        self._job = Job(job_key or "job", world_size, dict(parallelism or {}), name)
        self._client = client
        self._scratch = Path(tempfile.mkdtemp(prefix=f"tracesets-rank{rank}-"))
        self._thread: threading.Thread | None = None
        self.result: RankUpload | None = None
        self.error: BaseException | None = None

    def __call__(self, prof: Any) -> None:
        if self._thread is not None:
            log.warning("rank %d: only the first trace is uploaded; this one is not", self.rank)
            return
        path = self._scratch / rank_file_name(self.rank, self.world_size, "trace" + _TRACE_SUFFIX)
        prof.export_chrome_trace(str(path))  # gzip, since the name ends in .gz
        job = self._shared_job(path) if self._distributed else self._job
        self._thread = threading.Thread(
            target=self._upload, args=(path, job), name=f"tracesets-rank{self.rank}"
        )
        self._thread.start()

    def _shared_job(self, path: Path) -> Job:
        """Rank 0's job key and trace, broadcast: every rank then builds the same body."""
        shared = b""
        if self.rank == 0:
            key = self._key or f"torch-{uuid.uuid4()}"
            shared = jsontext.dumps([key, path.name, path.stat().st_size, _sha256(path)])
        key, first_name, size, sha256 = jsontext.loads(_broadcast(shared))
        first = FirstFile(first_name, size, sha256)
        return Job(key, self.world_size, self._job.parallelism, self._job.name, first)

    def _upload(self, path: Path, job: Job) -> None:
        try:
            with self._client() as client:
                self.result = upload_rank(client, path, job=job, rank=self.rank)
        except Exception as error:  # training goes on: the trace stays on disk, said where
            self.error = error
            log.warning("rank %d: the trace %s was not uploaded: %s", self.rank, path, error)
            return
        shutil.rmtree(self._scratch, ignore_errors=True)
        log.info(
            "rank %d: trace sent to traceset %s (%s)",
            self.rank,
            self.result.traceset_id,
            self.result.status,
        )

    def wait(self, timeout: float | None = None) -> RankUpload | None:
        """Wait for this rank's upload; its outcome (None if it failed: see ``error``)."""
        if self._thread is not None:
            self._thread.join(timeout)
        return self.result


def _broadcast(payload: bytes) -> bytes:
    """Rank 0's ``payload`` on every rank: one broadcast of a fixed-size byte tensor, on
    the device the default group's backend uses (object collectives need numpy)."""
    import torch
    import torch.distributed as dist

    if len(payload) > _BROADCAST_BYTES - 4:
        raise JobError("The job key is too long to share; give a shorter one")
    device = torch.device("cpu")
    if dist.get_backend() == "nccl":
        device = torch.device("cuda", torch.cuda.current_device())
    framed = len(payload).to_bytes(4, "big") + payload
    buffer = torch.zeros(_BROADCAST_BYTES, dtype=torch.uint8, device=device)
    if payload:
        buffer[: len(framed)] = torch.tensor(list(framed), dtype=torch.uint8)
    dist.broadcast(buffer, src=0)
    received = bytes(buffer.cpu().tolist())
    return received[4 : 4 + int.from_bytes(received[:4], "big")]


def trace_handler(
    *,
    job_key: str | None = None,
    rank: int | None = None,
    world_size: int | None = None,
    parallelism: Mapping[str, int] | None = None,
    name: str | None = None,
    url: str | None = None,
    token: str | None = None,
) -> TraceHandler:
    """A handler for ``torch.profiler.profile(on_trace_ready=...)``; see the module's text.

    ``url`` and ``token`` default to ``TRACESETS_URL`` and ``TRACESETS_TOKEN``;
    ``parallelism`` takes degrees ``dp``, ``tp``, ``sp``, ``ep``, ``pp`` whose product is
    the world size.
    """
    return TraceHandler(
        job_key=job_key,
        rank=rank,
        world_size=world_size,
        parallelism=parallelism,
        name=name,
        client=lambda: Client(url, token),
    )
