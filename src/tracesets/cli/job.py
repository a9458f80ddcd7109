"""``tracesets upload FILE --rank R --world-size N``: one rank's trace into its job's traceset."""

from __future__ import annotations

import os
from pathlib import Path

from tracesets.cli import options
from tracesets.cli.output import say
from tracesets.client.errors import ClientError
from tracesets.client.job import upload_rank
from tracesets.jobs import Job, JobError, job_key_from_environment, ranges


def upload_one_rank(
    paths: list[Path],
    *,
    job_key: str | None,
    rank: int | None,
    world_size: int | None,
    degrees: dict[str, int | None],
    name: str | None,
    url: str | None,
    token: str | None,
) -> None:
    """Each rank's step of a launcher that runs one shell step per rank; the last to
    arrive completes the traceset."""
    if len(paths) != 1 or not paths[0].is_file():
        raise ClientError("With --rank, give exactly one FILE: this rank's trace", sent=False)
    if rank is None or world_size is None:
        raise ClientError("--rank and --world-size go together", sent=False)
    try:
        job = Job(
            key=job_key or job_key_from_environment(os.environ),
            world_size=world_size,
            parallelism={d: v for d, v in degrees.items() if v is not None},
            name=name,
        )
    except JobError as why:
        raise ClientError(str(why), sent=False) from None
    with options.client(url, token) as client:
        try:
            done = upload_rank(client, paths[0], job=job, rank=rank)
        except JobError as why:
            raise ClientError(str(why), sent=False) from None
    say(f"{done.traceset_id}  rank {rank} sent as {done.name}; traceset {done.status}")
    if done.missing:
        say(f"waiting for ranks ({len(done.missing)} of {world_size}): {ranges(done.missing)}")
