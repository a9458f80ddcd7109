"""The real PyTorch traces in ``tests/data/traces``: exactly what its README lists.

| file | what it holds |
| sampled_rank-0/1.json.gz | two ranks of one NCCL job, compact one-line JSON, world_size 128 |
| nccl_data.json.gz | rank 0 of a 2-rank NCCL job, pretty-printed, with pg_config |
| rank_not_found.json.gz | a trace whose distributedInfo has no rank |
| mi250_minitoy_train_ROCm6_2_kineto.json.gz | a ROCm (MI250) training run, no distributedInfo |
| mtia_inference_rank_0.json.gz | an MTIA inference run, the rank only in its file name |
| mtia_rank_0.json.gz | an MTIA training run, rank 0 of 1 |
"""

from __future__ import annotations

import gzip
import io
import tarfile
import zipfile
from pathlib import Path

from tracesets.inspection import BytesSource, FileFinding, FileSource, inspect_file, summarize

REPO_ROOT = Path(__file__).resolve().parents[2]
#: Copied from ``shared/data/traces`` with their licence (tests/data/traces/LICENSE).
TRACES = REPO_ROOT / "tests" / "data" / "traces"
NAMES = (
    "nccl_data.json.gz",
    "rank_not_found.json.gz",
    "sampled_rank-0.json.gz",
    "sampled_rank-1.json.gz",
)


def only(findings: list[FileFinding]) -> FileFinding:
    assert len(findings) == 1, findings
    return findings[0]


def inspect_real(name: str) -> FileFinding:
    return only(inspect_file(name, FileSource(TRACES / name)))


def test_sampled_ranks_are_ranks_0_and_1_of_128_in_compact_json() -> None:
    for rank in (0, 1):
        name = f"sampled_rank-{rank}.json.gz"
        assert inspect_real(name) == FileFinding(
            file=name,
            member=None,
            format="kineto-json-gzip",
            size=(TRACES / name).stat().st_size,
            rank=rank,
            world_size=128,
            backend="nccl",
            rank_source="header",
            problem=None,
        )


def test_nccl_data_is_rank_0_of_2_pretty_printed_with_pg_config() -> None:
    finding = inspect_real("nccl_data.json.gz")
    assert (finding.format, finding.rank, finding.world_size, finding.backend) == (
        "kineto-json-gzip",
        0,
        2,
        "nccl",
    )
    assert finding.rank_source == "header"
    assert finding.problem is None and finding.readable


def test_rank_not_found_has_a_backend_but_no_rank() -> None:
    finding = inspect_real("rank_not_found.json.gz")
    assert finding.format == "kineto-json-gzip"
    assert (finding.rank, finding.world_size, finding.backend) == (None, None, "nccl")
    assert finding.rank_source is None
    assert finding.problem == "distributedInfo has no rank"
    assert finding.readable  # read fine: it just does not say


def test_the_four_together() -> None:
    findings = [
        finding for name in NAMES for finding in inspect_file(name, FileSource(TRACES / name))
    ]
    summary = summarize(findings, declared_rank_count=None)
    assert summary.ranks_found == [0, 1]
    assert summary.world_sizes == [2, 128]
    assert summary.world_size is None
    assert summary.duplicate_ranks == [0]  # nccl_data and sampled_rank-0 are both rank 0
    assert summary.missing_ranks == []  # no one world size to count from
    assert summary.unreadable == []
    assert "The traces disagree on the world size: 2 (1 trace), 128 (2 traces)." in summary.warnings
    assert (
        "rank_not_found.json.gz does not say its rank: distributedInfo has no rank."
        in summary.warnings
    )


def test_other_device_kinds_say_their_rank_as_far_as_they_can() -> None:
    rocm = inspect_real("mi250_minitoy_train_ROCm6_2_kineto.json.gz")
    assert (rocm.rank, rocm.world_size, rocm.backend, rocm.rank_source) == (None, None, None, None)
    assert rocm.problem is not None and "no distributedInfo" in rocm.problem
    inference = inspect_real("mtia_inference_rank_0.json.gz")
    assert (inference.rank, inference.world_size, inference.rank_source) == (0, None, "file name")
    training = inspect_real("mtia_rank_0.json.gz")
    assert (training.rank, training.world_size, training.rank_source) == (0, 1, "header")
    assert training.backend == "mtia:hccl,cpu:gloo"
    assert all(f.readable and f.format == "kineto-json-gzip" for f in (rocm, inference, training))


def test_the_sampled_pair_misses_126_ranks_of_its_world() -> None:
    findings = [
        only(inspect_file(name, FileSource(TRACES / name)))
        for name in ("sampled_rank-0.json.gz", "sampled_rank-1.json.gz")
    ]
    summary = summarize(findings, declared_rank_count=128)
    assert summary.world_size == 128
    assert summary.missing_ranks == list(range(2, 128))
    assert summary.warnings == ["126 of 128 declared ranks have no trace: 2-127."]


def test_the_real_traces_decompressed_read_the_same_as_plain_json() -> None:
    for name in NAMES:
        plain = gzip.decompress((TRACES / name).read_bytes())
        gz = inspect_real(name)
        finding = only(inspect_file(name.removesuffix(".gz"), BytesSource(plain)))
        assert finding.format == "kineto-json"
        assert (finding.rank, finding.world_size, finding.backend, finding.rank_source) == (
            gz.rank,
            gz.world_size,
            gz.backend,
            gz.rank_source,
        )


def test_the_real_traces_in_a_zip_and_a_tar_gz() -> None:
    as_zip, as_tar = io.BytesIO(), io.BytesIO()
    with zipfile.ZipFile(as_zip, "w") as archive:
        for name in NAMES:
            archive.write(TRACES / name, f"run/{name}")
    with tarfile.open(fileobj=as_tar, mode="w:gz") as archive:
        for name in NAMES:
            archive.add(TRACES / name, f"run/{name}")
    for archive_name, data in (("real.zip", as_zip.getvalue()), ("real.tar.gz", as_tar.getvalue())):
        findings = inspect_file(archive_name, BytesSource(data))
        assert [(f.member, f.rank, f.world_size) for f in findings] == [
            ("run/nccl_data.json.gz", 0, 2),
            ("run/rank_not_found.json.gz", None, None),
            ("run/sampled_rank-0.json.gz", 0, 128),
            ("run/sampled_rank-1.json.gz", 1, 128),
        ]
        assert {f.format for f in findings} == {"kineto-json-gzip"}
