"""A trace whose ``distributedInfo`` repeats a member, or is itself repeated: read as
Python's ``json`` reads it (and Holistic Trace Analysis with it), the last one winning."""

from __future__ import annotations

import gzip
import json

from tracesets.analysis import analyze_file
from tracesets.inspection import BytesSource, inspect_file

EVENTS = '"traceEvents": [{"name": "x", "ph": "X", "ts": 1, "dur": 2}]'


def _group(name: str) -> str:
    return f'{{"pg_name": "{name}", "pg_desc": "tp", "pg_size": 2, "ranks": [0, 1]}}'


def test_a_repeated_member_of_distributed_info_reads_as_the_last() -> None:
    trace = (
        '{"distributedInfo": {"rank": 1, "world_size": 8, "rank": 3, "backend": "nccl"}, '
        + EVENTS
        + "}"
    ).encode()
    assert json.loads(trace)["distributedInfo"]["rank"] == 3
    for data in (trace, gzip.compress(trace)):
        (finding,) = inspect_file("trace.json", BytesSource(data))
        assert (finding.rank, finding.world_size, finding.problem) == (3, 8, None)


def test_a_repeated_distributed_info_reads_as_the_last() -> None:
    trace = (
        '{"distributedInfo": {"rank": 1, "world_size": 8, "pg_config": [' + _group("1") + "]}, "
        '"distributedInfo": {"rank": 5, "world_size": 8, "pg_config": ['
        + _group("2")
        + "]}, "
        + EVENTS
        + "}"
    ).encode()
    assert json.loads(trace)["distributedInfo"]["rank"] == 5
    for data in (trace, gzip.compress(trace)):
        (finding,) = inspect_file("trace.json", BytesSource(data))
        assert (finding.rank, finding.world_size, finding.problem) == (5, 8, None)
        (traced,) = analyze_file("trace.json", BytesSource(data))
        assert [group.name for group in traced.analysis.collectives] == ["2"]
