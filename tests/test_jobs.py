"""The pure decisions every rank of a job takes alike (``tracesets.jobs``)."""

from __future__ import annotations

import hashlib

import pytest

from tracesets import jsontext
from tracesets.jobs import (
    FirstFile,
    Job,
    JobError,
    job_key_from_environment,
    missing_ranks,
    ranges,
    rank_file_name,
)
from tracesets.uploadrequest import read_upload_request


def test_every_rank_builds_the_same_body_and_key() -> None:
    bodies = {
        jsontext.dumps(Job("slurm-81", 64, {"dp": 8, "tp": 8}).upload_url_body()) for _ in range(3)
    }
    assert len(bodies) == 1
    body = Job("slurm-81", 64, {"tp": 8, "dp": 8}).upload_url_body()
    assert jsontext.dumps(body) in bodies  # degrees in the metadata's own order
    request = read_upload_request(body)
    assert request.rank_count == 64
    [manifest] = request.files
    assert (manifest.name, manifest.role) == ("job.json", "supporting")
    data = Job("slurm-81", 64, {"dp": 8, "tp": 8}).manifest()
    assert manifest.sha256 == hashlib.sha256(data).hexdigest()
    assert jsontext.loads(data) == {
        "jobKey": "slurm-81",
        "worldSize": 64,
        "parallelism": {"dp": 8, "tp": 8},
    }
    key = Job("x" * 5000, 2).idempotency_key
    assert len(key) <= 255 and key != Job("y", 2).idempotency_key


def test_a_shared_first_trace_replaces_the_job_file() -> None:
    first = FirstFile("rank0.pt.trace.json.gz", 1234, "a" * 64)
    body = Job("k", 4, first=first).upload_url_body()
    assert body["files"] == [
        {"name": "rank0.pt.trace.json.gz", "size": 1234, "role": "primary", "sha256": "a" * 64}
    ]
    assert read_upload_request(body).rank_count == 4


@pytest.mark.parametrize(
    ("job", "says"),
    [
        (lambda: Job("", 4), "job key"),
        (lambda: Job("k", 0), "world size"),
        (lambda: Job("k", 4, {"xp": 2}), "Unknown parallelism degree(s) xp"),
        (lambda: Job("k", 4, {"dp": 3}), "must equal"),
    ],
)
def test_a_job_described_wrongly_is_refused_before_anything_is_sent(job: object, says: str) -> None:
    with pytest.raises(JobError, match=None) as refused:
        job()  # type: ignore[operator]
    assert says in str(refused.value)


def test_the_job_key_comes_from_the_launcher() -> None:
    assert job_key_from_environment({"TORCHELASTIC_RUN_ID": "r1", "SLURM_JOB_ID": "9"}) == (
        "TORCHELASTIC_RUN_ID=r1"
    )
    assert job_key_from_environment({"TORCHELASTIC_RUN_ID": "none", "SLURM_JOB_ID": "9"}) == (
        "SLURM_JOB_ID=9"
    )
    with pytest.raises(JobError, match="TORCHELASTIC_RUN_ID or SLURM_JOB_ID"):
        job_key_from_environment({})


def test_rank_file_names_sort_in_rank_order_and_keep_the_trace_suffixes() -> None:
    assert rank_file_name(3, 4, "worker0.1234.pt.trace.json.gz") == "rank3.pt.trace.json.gz"
    assert rank_file_name(7, 4096, "trace.json") == "rank0007.json"
    assert rank_file_name(0, 1, "chakra.0.et") == "rank0.et"
    names = [rank_file_name(r, 1000, "t.json") for r in range(1000)]
    assert sorted(names) == names
    with pytest.raises(JobError, match="from 0 to 3"):
        rank_file_name(4, 4, "t.json")


def test_missing_ranks_by_name() -> None:
    received = ["job.json", "rank0.pt.trace.json.gz", "rank3.json", "rank3.json.gz"]
    assert missing_ranks(received, 5) == [1, 2, 4]
    assert missing_ranks([rank_file_name(r, 3, "t.json") for r in range(3)], 3) == []
    assert ranges([9, 0, 1, 2, 3, 7, 10]) == "0-3, 7, 9-10"
    assert ranges([]) == ""
