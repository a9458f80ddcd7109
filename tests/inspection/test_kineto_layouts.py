"""Kineto traces of every layout PyTorch writes: each one read for its rank and world size."""

from __future__ import annotations

import json
from typing import Any

from tests.inspection.kineto_writer import distributed_info, gzipped, kineto_trace
from tracesets.inspection import BytesSource, FileFinding, inspect_file
from tracesets.inspection.distributed import parse_ranks
from tracesets.inspection.jsonscan import CHUNK

TIB = 1 << 40


def inspect_one(name: str, data: bytes) -> FileFinding:
    findings = inspect_file(name, BytesSource(data))
    assert len(findings) == 1, findings
    return findings[0]


def claim(finding: FileFinding) -> tuple[Any, ...]:
    return (finding.format, finding.rank, finding.world_size, finding.backend, finding.rank_source)


class FarApart:
    """A trace of ``size`` bytes whose middle may not be read: its head, then its tail."""

    def __init__(self, trace: bytes, size: int, split: int) -> None:
        self.head, self.tail = trace[:split], trace[split:]
        self.size = size
        self.read_bytes = 0

    def read(self, offset: int, length: int) -> bytes:
        tail_start = self.size - len(self.tail)
        end = offset + length
        assert end <= len(self.head) + 4096 or offset >= tail_start - 4096, (
            f"read [{offset:,}, {end:,}) of a {self.size:,}-byte trace: the middle"
        )
        self.read_bytes += length
        middle = b" " * max(0, min(end, tail_start) - max(offset, len(self.head)))
        head = self.head[offset:end]
        tail = self.tail[max(0, offset - tail_start) : max(0, end - tail_start)]
        return head + middle + tail


def test_header_first_pretty_as_torch_profiler_writes_it() -> None:
    finding = inspect_one("trace.json", kineto_trace(3, 8, layout="header", pretty=True))
    assert claim(finding) == ("kineto-json", 3, 8, "nccl", "header")
    assert finding.problem is None and finding.readable


def test_header_first_compact_as_rewriting_tools_write_it() -> None:
    finding = inspect_one("trace.json", kineto_trace(5, 16, layout="header", pretty=False))
    assert claim(finding) == ("kineto-json", 5, 16, "nccl", "header")


def test_tail_pretty_as_kineto_on_demand_writes_it() -> None:
    finding = inspect_one("trace.json", kineto_trace(6, 8, layout="tail", pretty=True))
    assert claim(finding) == ("kineto-json", 6, 8, "nccl", "tail")


def test_tail_compact() -> None:
    finding = inspect_one("trace.json", kineto_trace(2, 4, layout="tail", pretty=False))
    assert claim(finding) == ("kineto-json", 2, 4, "nccl", "tail")


def test_gzip_header_first() -> None:
    data = gzipped(kineto_trace(1, 2, layout="header"))
    finding = inspect_one("trace.json.gz", data)
    assert claim(finding) == ("kineto-json-gzip", 1, 2, "nccl", "header")
    assert finding.size == len(data)


def test_gzip_tail_pretty_and_compact() -> None:
    for pretty in (True, False):
        finding = inspect_one("t.gz", gzipped(kineto_trace(7, 8, layout="tail", pretty=pretty)))
        assert claim(finding) == ("kineto-json-gzip", 7, 8, "nccl", "tail")


def test_gzip_is_known_by_its_magic_bytes_not_its_name() -> None:
    assert inspect_one("trace.json", gzipped(kineto_trace(1, 2))).format == "kineto-json-gzip"
    assert inspect_one("trace.json.gz", kineto_trace(1, 2)).format == "kineto-json"


def test_concatenated_gzip_members_are_one_trace() -> None:
    trace = kineto_trace(4, 8, layout="tail", events=400)
    half = len(trace) // 2
    finding = inspect_one("t.json.gz", gzipped(trace[:half]) + gzipped(trace[half:]))
    assert claim(finding) == ("kineto-json-gzip", 4, 8, "nccl", "tail")


def test_no_distributed_info_says_so_and_takes_the_rank_from_the_file_name() -> None:
    trace = kineto_trace(None, None, layout="none")
    anonymous = inspect_one("trace.json", trace)
    assert claim(anonymous) == ("kineto-json", None, None, None, None)
    assert anonymous.problem is not None and "no distributedInfo" in anonymous.problem
    assert anonymous.readable
    named = inspect_one("worker_rank-12.json", trace)
    assert claim(named) == ("kineto-json", 12, None, None, "file name")
    assert named.problem is None


def test_the_trace_wins_over_its_file_name() -> None:
    assert inspect_one("rank9.json", kineto_trace(3, 8)).rank == 3


def test_world_size_from_the_default_group_when_world_size_is_absent() -> None:
    info = distributed_info(3, 8)
    del info["world_size"]
    assert inspect_one("t.json", kineto_trace(info=info)).world_size == 8
    info["pg_config"][0] = {"pg_name": "0", "pg_desc": "default_pg", "ranks": "0,1,2,3"}
    assert inspect_one("t.json", kineto_trace(info=info)).world_size == 4


def test_pg_count_is_not_trusted() -> None:
    info = distributed_info(3, 8, pg_count=57)
    finding = inspect_one("t.json", kineto_trace(info=info, layout="tail"))
    assert (finding.rank, finding.world_size, finding.problem) == (3, 8, None)


def test_pg_config_ranks_as_a_list_or_a_string() -> None:
    assert parse_ranks([0, 1, 2]) == [0, 1, 2]
    assert parse_ranks("[0, 1, 2]") == [0, 1, 2]
    assert parse_ranks("0,1,2") == [0, 1, 2]
    assert parse_ranks(" 4 5 ") == [4, 5]
    assert parse_ranks("[]") == [] and parse_ranks("") == []
    assert parse_ranks("[0, x]") is None and parse_ranks([0, -1]) is None
    assert parse_ranks({"0": 1}) is None


def test_rank_and_world_size_must_be_whole_numbers() -> None:
    cases: list[tuple[object, object, int | None, int | None, str | None]] = [
        ("3", "8", 3, 8, None),  # digits in a string, as some tools write them
        (-1, 8, None, 8, "distributedInfo.rank is -1, not a whole number"),
        (2.0, 8, None, 8, "distributedInfo.rank is 2.0, not a whole number"),
        (True, 8, None, 8, "distributedInfo.rank is true, not a whole number"),
        (1, 0, 1, None, "distributedInfo.world_size is 0, not a whole number of at least 1"),
        (9, 8, 9, 8, "rank 9 is not below the world size 8"),
    ]
    for rank, world_size, want_rank, want_size, problem in cases:
        info = {"backend": "gloo", "rank": rank, "world_size": world_size}
        finding = inspect_one("t.json", kineto_trace(info=info))
        assert (finding.rank, finding.world_size, finding.problem) == (
            want_rank,
            want_size,
            problem,
        )
        assert finding.backend == "gloo"


def test_distributed_info_that_is_not_an_object() -> None:
    finding = inspect_one("t.json", kineto_trace(info=[0, 8]))
    assert finding.problem == "distributedInfo is [0, 8], not a JSON object"
    assert finding.readable and finding.rank is None


def test_the_key_as_a_string_value_is_not_the_key() -> None:
    trace = kineto_trace(None, None, layout="none")
    trace = trace.replace(
        b'"schemaVersion": 1,', b'"schemaVersion": 1, "note": "distributedInfo",', 1
    )
    escaped = trace.replace(
        b'"traceName"', b'"comment": "see \\"distributedInfo\\": {\\"rank\\": 5}", "traceName"', 1
    )
    for data in (trace, escaped):
        finding = inspect_one("t.json", data)
        assert finding.rank is None and "no distributedInfo" in (finding.problem or "")


def test_byte_order_mark_and_leading_whitespace() -> None:
    finding = inspect_one("t.json", b"\xef\xbb\xbf \n\t" + kineto_trace(2, 4, pretty=False))
    assert claim(finding) == ("kineto-json", 2, 4, "nccl", "header")


def test_a_long_tail_after_distributed_info_is_searched_in_a_wider_window() -> None:
    trace = kineto_trace(3, 8, layout="tail")
    logs = json.dumps(
        [f"INFO:2024-05-22 17:15:22 CuptiActivityProfiler.cpp:{n}] line" for n in range(4000)]
    )
    trace = trace.replace(b'\n  "traceName"', b'\n  "INFO": ' + logs.encode() + b',\n  "traceName"')
    assert len(logs) > CHUNK
    assert claim(inspect_one("t.json", trace))[1:3] == (3, 8)
    assert claim(inspect_one("t.json.gz", gzipped(trace)))[1:3] == (3, 8)


def test_a_one_terabyte_trace_is_read_at_its_head_only() -> None:
    trace = kineto_trace(3, 8, layout="header", events=2000)
    source = FarApart(trace, TIB, split=len(trace) // 2)
    finding = inspect_file("huge.json", source)[0]
    assert (finding.rank, finding.world_size, finding.rank_source, finding.size) == (
        3,
        8,
        "header",
        TIB,
    )
    assert source.read_bytes <= CHUNK + 512  # the first bytes, then the head


def test_a_one_terabyte_trace_with_its_tail_layout_reads_head_and_tail_only() -> None:
    trace = kineto_trace(5, 8, layout="tail", events=2000)
    source = FarApart(trace, TIB, split=len(trace) // 2)
    finding = inspect_file("huge.json", source)[0]
    assert (finding.rank, finding.world_size, finding.rank_source) == (5, 8, "tail")
    assert source.read_bytes <= 2 * CHUNK + 512  # the first bytes, the head, the last 64 KiB
