"""Bad bytes of every kind become a finding with a problem, never an exception."""

from __future__ import annotations

import gzip
import io
import random
import tarfile
import zipfile

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.inspection.kineto_writer import gzipped, kineto_trace
from tracesets.inspection import (
    BytesSource,
    FileFinding,
    SourceError,
    decompress,
    inspect_file,
    summarize,
)

TRACE = kineto_trace(3, 8, layout="tail", events=40)


def only(name: str, data: bytes) -> FileFinding:
    findings = inspect_file(name, BytesSource(data))
    assert len(findings) == 1, findings
    return findings[0]


def unreadable(name: str, data: bytes) -> str:
    finding = only(name, data)
    assert not finding.readable and finding.rank is None and finding.format == "unknown"
    assert finding.problem
    return finding.problem


def test_an_empty_file() -> None:
    assert unreadable("rank0.json", b"") == "the file is empty"


def test_random_bytes() -> None:
    noise = b"\x00" + random.Random(7).randbytes(100_000)  # a NUL first: no magic, no brace
    problem = unreadable("rank0.json", noise)
    assert problem.startswith("not a trace Tracesets can read (it starts with b")


def test_whitespace_only() -> None:
    assert unreadable("t.json", b" \n" * 10) == "not a trace Tracesets can read (only whitespace)"


def test_json_that_is_not_a_trace() -> None:
    problem = unreadable("t.json", b'{"name": "not a trace", "values": [1, 2, 3]}')
    assert problem == (
        "JSON, but neither a PyTorch profiler trace (no traceEvents) nor a Chakra host trace "
        "(no nodes)"
    )
    assert unreadable("t.json", b"[1, 2]").startswith("not a trace Tracesets can read")


def test_a_truncated_gzip_before_its_kind_shows() -> None:
    problem = unreadable("t.json.gz", gzipped(TRACE)[:15])
    assert problem.startswith("the gzip stream stops after")


def test_a_truncated_gzip_whose_tail_is_lost() -> None:
    data = gzipped(kineto_trace(3, 8, layout="tail", events=4000))
    finding = only("rank3.json.gz", data[: len(data) // 2])
    assert finding.format == "kineto-json-gzip"  # its head was read: it is a Kineto trace
    assert not finding.readable and finding.rank is None  # not the file name's rank: unread
    assert (finding.problem or "").startswith("the gzip stream stops after")


def test_a_truncated_gzip_whose_head_already_said() -> None:
    data = gzipped(kineto_trace(3, 8, layout="header", events=4000))
    finding = only("t.json.gz", data[: len(data) // 2])
    assert (finding.rank, finding.world_size, finding.readable) == (3, 8, True)


def test_corrupt_gzip() -> None:
    data = bytearray(gzipped(TRACE))
    data[3] = 0xFF  # reserved flag bits
    assert unreadable("t.gz", bytes(data)).startswith("the compressed data is corrupt")


def test_a_large_gzip_damaged_in_its_middle() -> None:
    data = bytearray(gzipped(kineto_trace(3, 8, layout="tail", events=60_000)))
    assert len(data) > decompress.WHOLE_INPUT_LIMIT  # read step by step, not in one call
    middle = len(data) // 2
    data[middle : middle + 64] = bytes(b ^ 0x55 for b in data[middle : middle + 64])
    finding = only("rank3.json.gz", bytes(data))
    assert finding.format == "kineto-json-gzip"  # its head was read: it is a Kineto trace
    assert not finding.readable and finding.rank is None
    assert (finding.problem or "").startswith("the compressed data is corrupt (")


def test_a_plain_trace_cut_inside_its_distributed_info() -> None:
    cut = TRACE[: TRACE.index(b'"pg_config"')]
    finding = only("t.json", cut)
    assert finding.readable and finding.rank is None
    assert (finding.problem or "").startswith(
        "its distributedInfo could not be decoded: not valid JSON"
    )


def test_deeply_nested_distributed_info() -> None:
    nested = b'{"distributedInfo": ' + b"[" * 100_000 + b"]" * 100_000 + b', "traceEvents": []}'
    finding = only("t.json", nested)
    assert finding.rank is None and finding.problem is not None


def test_garbage_findings_are_summarized_as_unreadable() -> None:
    findings = [
        *inspect_file("a.json", BytesSource(b"")),
        *inspect_file("b.zip", BytesSource(b"PK\x03\x04 not really")),
    ]
    summary = summarize(findings, declared_rank_count=2)
    assert summary.unreadable == ["a.json", "b.zip"]
    assert "a.json could not be read: the file is empty." in summary.warnings


class Failing:
    size = 1000

    def read(self, offset: int, length: int) -> bytes:
        raise ConnectionError("storage is down")


def test_a_failing_source_is_raised_not_reported() -> None:
    with pytest.raises(SourceError, match="storage is down"):
        inspect_file("t.json", Failing())


def _archives() -> dict[str, bytes]:
    as_zip, as_tar = io.BytesIO(), io.BytesIO()
    with zipfile.ZipFile(as_zip, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("rank3.json", TRACE)
        archive.writestr("rank4.json.gz", gzipped(TRACE))
    with tarfile.open(fileobj=as_tar, mode="w:gz") as archive:
        info = tarfile.TarInfo("rank3.json")
        info.size = len(TRACE)
        archive.addfile(info, io.BytesIO(TRACE))
    return {
        "t.json": TRACE,
        "t.json.gz": gzipped(TRACE),
        "t.gz.concat": gzip.compress(TRACE[:500]) + gzip.compress(TRACE[500:]),
        "t.zip": as_zip.getvalue(),
        "t.tar.gz": as_tar.getvalue(),
    }


SAMPLES = _archives()


def check_never_raises(name: str, data: bytes) -> None:
    for finding in inspect_file(name, BytesSource(data)):
        assert finding.format in (
            "kineto-json",
            "kineto-json-gzip",
            "chakra-host-et",
            "et",
            "nsys-rep",
            "unknown",
        )
        assert finding.readable or finding.problem
        assert finding.rank is None or finding.rank >= 0


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.binary(max_size=2048),
    st.sampled_from(["t.json", "t.json.gz", "t.zip", "rank1.et", "x.nsys-rep"]),
)
def test_arbitrary_bytes_never_raise(data: bytes, name: str) -> None:
    check_never_raises(name, data)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(sorted(SAMPLES)),
    st.data(),
)
def test_damaged_traces_and_archives_never_raise(name: str, data: st.DataObject) -> None:
    original = SAMPLES[name]
    damage = data.draw(st.sampled_from(["cut", "flip", "splice"]))
    at = data.draw(st.integers(0, len(original) - 1))
    if damage == "cut":
        damaged = original[:at]
    elif damage == "flip":
        damaged = (
            original[:at]
            + bytes([original[at] ^ data.draw(st.integers(1, 255))])
            + original[at + 1 :]
        )
    else:
        damaged = original[:at] + data.draw(st.binary(max_size=64)) + original[at:]
    check_never_raises(name, damaged)
