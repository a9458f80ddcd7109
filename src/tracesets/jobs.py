"""One traceset per training job, each rank sending its own trace: the shared decisions.

Pure, like the upload rules: the client, the command line and ``tracesets.torch`` call
it. Every rank must reach the same traceset without talking to the others, so
everything here is a function of what every rank knows alike (the job key, the world
size, the parallelism degrees): the upload-url body built from them is byte for byte
the same on every rank, and sent with the job key as its Idempotency-Key the first one
creates the traceset and the others get it back.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any, Final

from tracesets import jsontext, workload
from tracesets.inspection.names import rank_in_name

#: Where a launcher says which job a process belongs to, in the order they are tried.
JOB_KEY_VARIABLES: Final = ("TORCHELASTIC_RUN_ID", "SLURM_JOB_ID")
#: The file every rank declares alike, so the traceset exists before any trace is added.
MANIFEST_NAME: Final = "job.json"
DEGREES: Final = ("dp", "tp", "sp", "ep", "pp")


class JobError(ValueError):
    """The job is not described well enough to find its traceset; says what is missing."""


@dataclass(frozen=True, slots=True)
class FirstFile:
    """A rank's trace every rank declares alike (its name, size and sha256 were shared,
    e.g. by a broadcast), so the traceset holds traces only."""

    name: str
    size: int
    sha256: str


@dataclass(frozen=True, slots=True)
class Job:
    """What every rank of one job knows alike.

    The traceset is created with one file: ``first`` when the ranks could share it,
    else the job file (``job.json``, bytes every rank builds alike).
    """

    key: str
    world_size: int
    parallelism: Mapping[str, int] = field(default_factory=dict)
    name: str | None = None
    first: FirstFile | None = None

    def __post_init__(self) -> None:
        if not self.key:
            raise JobError("The job key must not be empty")
        if type(self.world_size) is not int or self.world_size < 1:
            raise JobError(
                f"The world size must be a whole number of at least 1; got {self.world_size!r}"
            )
        unknown = sorted(set(self.parallelism) - set(DEGREES))
        if unknown:
            raise JobError(
                f"Unknown parallelism degree(s) {', '.join(unknown)}; use {', '.join(DEGREES)}"
            )
        refused = workload.check_rank_count(self.metadata(), has_primary_files=True).problems
        if refused:
            raise JobError(refused[0].message)

    @property
    def idempotency_key(self) -> str:
        """Sent with upload-url; hashed so any job key fits the header's 255 printable bytes."""
        return "tracesets-job-" + hashlib.sha256(self.key.encode()).hexdigest()

    def manifest(self) -> bytes:
        """The job file's bytes: the same on every rank."""
        described: dict[str, Any] = {"jobKey": self.key, "worldSize": self.world_size}
        if self.parallelism:
            described["parallelism"] = self.metadata()["parallelism"]
        return jsontext.dumps(described)

    def metadata(self) -> dict[str, Any]:
        declared: dict[str, Any] = {"shape": {"rankCount": self.world_size}}
        if self.parallelism:
            declared["parallelism"] = {
                d: self.parallelism[d] for d in DEGREES if d in self.parallelism
            }
        return declared

    def upload_url_body(self) -> dict[str, Any]:
        if self.first is not None:
            first = self.first
            entry = {
                "name": first.name,
                "size": first.size,
                "role": "primary",
                "sha256": first.sha256,
            }
        else:
            manifest = self.manifest()
            entry = {
                "name": MANIFEST_NAME,
                "size": len(manifest),
                "role": "supporting",
                "sha256": hashlib.sha256(manifest).hexdigest(),
            }
        return {
            "name": self.name or f"Training job {self.key}",
            "files": [entry],
            "workloadMetadata": self.metadata(),
        }


def job_key_from_environment(environ: Mapping[str, str] | None = None) -> str:
    """The launcher's job id; JobError naming the variables tried when there is none."""
    env = os.environ if environ is None else environ
    for variable in JOB_KEY_VARIABLES:
        value = env.get(variable, "")
        # torchrun without --rdzv-id calls every job "none": not a key that tells jobs apart.
        if value and value != "none":
            return f"{variable}={value}"
    raise JobError(
        f"No job key: set {' or '.join(JOB_KEY_VARIABLES)}, or pass one (--job-key, job_key=)"
    )


def rank_file_name(rank: int, world_size: int, original: str) -> str:
    """The name a rank's trace takes in the traceset: its rank, padded so the names sort
    in rank order, then the original's suffixes (``.pt.trace.json.gz``), numbers dropped."""
    if not 0 <= rank < world_size:
        raise JobError(f"The rank must be from 0 to {world_size - 1}; got {rank}")
    suffixes = "".join(s for s in PurePosixPath(original).suffixes if not s[1:].isdigit())
    return f"rank{rank:0{len(str(world_size - 1))}d}{suffixes}"


def missing_ranks(received: Iterable[str], world_size: int) -> list[int]:
    """The ranks of ``range(world_size)`` no received file's name gives."""
    present = {rank_in_name(name) for name in received}
    return [rank for rank in range(world_size) if rank not in present]


def ranges(ranks: Iterable[int]) -> str:
    """``0-3, 7, 9-10``: runs of consecutive ranks, so thousands of them stay one line."""
    runs: list[list[int]] = []
    for rank in sorted(set(ranks)):
        if runs and rank == runs[-1][1] + 1:
            runs[-1][1] = rank
        else:
            runs.append([rank, rank])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)
