"""A rank of a training job sends its trace into the job's one traceset.

Every rank runs the same steps with no word from the others: join the job's traceset
(upload-url with the job's body and key: the first rank creates it, the others get it
back), send the shared job file if it has not arrived, add and send its own trace, then
complete the traceset if every rank's trace has arrived. Whichever rank finishes last
sees all of them and completes; ranks finishing together may both try, and completing
twice is harmless. A rank that never sends leaves the traceset pending, the others' files
kept, and ``missing`` names it.
"""

from __future__ import annotations

import hashlib
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from tracesets.client.errors import ClientError
from tracesets.client.files import LocalFile, PathLike
from tracesets.client.sync import Client
from tracesets.jobs import MANIFEST_NAME, Job, missing_ranks, rank_file_name

if TYPE_CHECKING:
    from tracesets.client.models import UploadUrlResponse


@dataclass(frozen=True, slots=True)
class RankUpload:
    """Where the job's traceset stands once this rank's trace has arrived."""

    traceset_id: str
    name: str  # this rank's file in the traceset
    status: str  # "ready" once every rank's trace has arrived, else "pending"
    missing: list[int]  # the ranks whose trace has not arrived yet


def _create(client: Client, job: Job) -> UploadUrlResponse:
    body = job.upload_url_body()
    return client.request_upload_urls(
        name=body["name"],
        files=body["files"],
        workload_metadata=body["workloadMetadata"],
        idempotency_key=job.idempotency_key,
    )


def join(client: Client, job: Job) -> str:
    """The id of the job's traceset, created by whichever rank asks first; the job file
    sent if it is the first file and has not arrived."""
    created = _create(client, job)
    if job.first is None and created.uploads:  # any rank may send it: the bytes are alike
        with tempfile.TemporaryDirectory(prefix="tracesets-job-") as scratch:
            manifest = job.manifest()
            path = Path(scratch) / MANIFEST_NAME
            path.write_bytes(manifest)
            local = LocalFile(
                path,
                MANIFEST_NAME,
                len(manifest),
                "supporting",
                hashlib.sha256(manifest).hexdigest(),
            )
            client.send_uploads(created.tracesetId, [local], created.uploads)
    return created.tracesetId


def upload_rank(
    client: Client,
    path: PathLike,
    *,
    job: Job,
    rank: int,
    traceset_id: str | None = None,
) -> RankUpload:
    """Send this rank's trace into the job's traceset (joined unless ``traceset_id`` is
    given), then complete it if it was the last to arrive."""
    name = rank_file_name(rank, job.world_size, Path(path).name)
    if job.first is not None and job.first.name == name and traceset_id is None:
        # This rank's trace is the one the traceset was created with: send it as answered.
        created = _create(client, job)
        traceset_id = created.tracesetId
        mine = LocalFile(Path(path), name, job.first.size, "primary", job.first.sha256)
        client.send_uploads(traceset_id, [mine], [u for u in created.uploads if u.name == name])
    else:
        traceset_id = traceset_id or join(client, job)
        client.send_file(traceset_id, path, name=name)
    status, missing = finish_if_complete(client, traceset_id, job.world_size)
    return RankUpload(traceset_id, name, status, missing)


def finish_if_complete(client: Client, traceset_id: str, world_size: int) -> tuple[str, list[int]]:
    """Complete the traceset when every rank's trace has arrived; (status, missing ranks)."""
    status = client.upload_status(traceset_id)
    if status.status != "pending":
        return status.status, []
    missing = missing_ranks(status.received, world_size)
    if missing or status.uploads:
        return "pending", missing
    try:
        return client.complete(traceset_id).status, []
    except ClientError as refused:
        if refused.status == 409:  # a file declared meanwhile has not arrived: not the last
            return "pending", missing
        raise
