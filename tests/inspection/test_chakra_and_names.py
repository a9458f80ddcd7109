"""Chakra host traces, Chakra ``.et`` and Nsight ``.nsys-rep`` files, and ranks in file names."""

from __future__ import annotations

import io
import zipfile

import pytest

from tests.inspection.chakra_writer import chakra_host_trace
from tests.inspection.kineto_writer import gzipped
from tracesets.inspection import BytesSource, FileFinding, inspect_file
from tracesets.inspection.names import rank_in_name


def only(name: str, data: bytes) -> FileFinding:
    (finding,) = inspect_file(name, BytesSource(data))
    return finding


def test_a_chakra_host_trace_gives_its_world_size_and_its_name_gives_its_rank() -> None:
    finding = only("host_3.json", chakra_host_trace(8, subgroups=[[2, 3]]))
    assert (finding.format, finding.rank, finding.world_size, finding.backend) == (
        "chakra-host-et",
        3,
        8,
        "nccl",
    )
    assert (finding.rank_source, finding.problem) == ("file name", None)


def test_the_older_chakra_schema() -> None:
    finding = only("et_rank5.json", chakra_host_trace(16, old_schema=True))
    assert (finding.format, finding.rank, finding.world_size) == ("chakra-host-et", 5, 16)


def test_a_chakra_host_trace_without_a_rank_in_its_name() -> None:
    finding = only("execution_trace.json", chakra_host_trace(4))
    assert (finding.rank, finding.world_size, finding.readable) == (None, 4, True)
    assert finding.problem == (
        "Chakra host traces do not record their rank, and its file name does not say it"
    )


def test_a_chakra_host_trace_without_process_groups() -> None:
    finding = only("host_0.json", chakra_host_trace(None))
    assert (finding.format, finding.rank, finding.world_size) == ("chakra-host-et", 0, None)
    bare = only("et.json", chakra_host_trace(None))
    assert bare.problem is not None and "no '## process_group:init ##' node" in bare.problem


def test_a_gzipped_chakra_host_trace_and_one_named_et() -> None:
    assert only("host_2.json.gz", gzipped(chakra_host_trace(8))).world_size == 8
    assert only("rank2.et", chakra_host_trace(8)).format == "chakra-host-et"  # bytes, not name


def test_chakra_protobuf_and_nsight_files_are_known_by_name() -> None:
    protobuf = b"\x0a\x1c\x0a\x05\x31\x2e\x30\x2e\x34" + bytes(range(200))
    cases = [
        ("chakra.0.et", protobuf, "et", 0),
        ("trace_rank-12.et", protobuf, "et", 12),
        ("profile.et", protobuf, "et", None),
        ("report_rank3.nsys-rep", b"\x00" * 64, "nsys-rep", 3),
        ("nsys.7.nsys-rep", b"\x00" * 64, "nsys-rep", 7),
        ("old_rank1.qdrep", b"\x00" * 64, "nsys-rep", 1),
        ("profile.nsys-rep", b"PK\x03\x04 looks like a zip", "nsys-rep", None),
    ]
    for name, data, fmt, rank in cases:
        finding = only(name, data)
        assert (finding.format, finding.rank, finding.readable) == (fmt, rank, True), name
        assert finding.rank_source == ("file name" if rank is not None else None)
        assert (finding.problem is None) == (rank is not None)


def test_nsight_reports_inside_a_zip() -> None:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for rank in range(4):
            archive.writestr(f"nsys/rank{rank}.nsys-rep", b"\x00" * 100)
    findings = inspect_file("nsys.zip", BytesSource(out.getvalue()))
    assert [(f.format, f.rank, f.size) for f in findings] == [
        ("nsys-rep", r, 100) for r in range(4)
    ]


@pytest.mark.parametrize(
    ("name", "rank"),
    [
        ("rank3.json", 3),
        ("rank_3.json", 3),
        ("rank-03.json", 3),
        ("RANK12.pt.trace.json", 12),
        ("run/rank7/trace.json", 7),
        ("rank1/rank2.json", 2),
        ("chakra.0.et", 0),
        ("trace.15.json.gz", 15),
        ("host_4.json", 4),
        ("ranks.json", None),
        ("rank_not_found.json.gz", None),
        ("trace.et", None),
        ("model-v2.json", None),
    ],
)
def test_ranks_in_file_names(name: str, rank: int | None) -> None:
    assert rank_in_name(name) == rank
