"""A number past 64 bits in one rank's trace: a finding for that file, the others kept.

JSON has no bound on numbers, and Python's ``json`` reads ``100000000000000000000000``
as an integer; the figures and findings are kept as JSON that holds 64-bit integers.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from tests.analysis.run_writer import Run, rank_trace
from tests.flows import inspected, upload
from tracesets.analysis import analyze_file, stored
from tracesets.inspection import BytesSource, inspect_file

BIG = 100_000_000_000_000_000_000_000
RUN = Run(tp=2, dp=2, steps=3, seed=7)

Edit = Callable[[dict[str, Any]], None]


def _first(trace: dict[str, Any], test: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
    return next(event for event in trace["traceEvents"] if test(event))


def _kernel_dur(value: object) -> Edit:
    def edit(trace: dict[str, Any]) -> None:
        _first(trace, lambda e: e.get("cat") == "kernel")["dur"] = value

    return edit


def _kernel_ts(value: object) -> Edit:
    def edit(trace: dict[str, Any]) -> None:
        _first(trace, lambda e: e.get("cat") == "kernel")["ts"] = value

    return edit


def _elements(value: object) -> Edit:
    def edit(trace: dict[str, Any]) -> None:
        comms = _first(trace, lambda e: e.get("name") == "record_param_comms")
        comms["args"]["In msg nelems"] = value

    return edit


def _info(member: str, value: object) -> Edit:
    def edit(trace: dict[str, Any]) -> None:
        trace["distributedInfo"][member] = value

    return edit


def _group_ranks(value: object) -> Edit:
    def edit(trace: dict[str, Any]) -> None:
        trace["distributedInfo"]["pg_config"][1]["ranks"] = [0, value]

    return edit


def _edited(rank: int, edit: Edit) -> bytes:
    trace = json.loads(rank_trace(RUN, rank))
    edit(trace)
    return json.dumps(trace).encode()


#: Each edit, and the member the file's finding or figures' problem names (None: the value
#: is passed over as one of the wrong type would be, as a group's ranks that are no list).
EDITS: dict[str, tuple[Edit, str | None]] = {
    "kernel dur": (_kernel_dur(BIG), "dur"),
    "kernel ts": (_kernel_ts(BIG), "ts"),
    "collective elements": (_elements(BIG), "In msg nelems"),
    "collective elements summed past 64 bits": (_elements(2**62), "In msg nelems"),
    "rank": (_info("rank", BIG), "distributedInfo.rank"),
    "world size": (_info("world_size", BIG), "distributedInfo.world_size"),
    "group ranks": (_group_ranks(BIG), None),
}


@pytest.mark.parametrize("name", list(EDITS))
def test_one_file_past_64_bits_is_read_with_a_finding(name: str) -> None:
    edit, member = EDITS[name]
    data = _edited(1, edit)
    findings = inspect_file("trace.json", BytesSource(data))
    traces = analyze_file("trace.json", BytesSource(data))
    problems = [f.problem for f in findings] + [t.analysis.problem for t in traces]
    if member is None:
        assert problems == [None, None]
    else:
        assert any(p is not None and member in p for p in problems), problems
    # what passes between the processes that read the files and the one that joins them
    assert stored.loads(stored.dumps(findings, traces)) == (findings, traces)


def test_a_rank_past_64_bits_spoils_only_its_own_file(api: httpx.Client) -> None:
    files = {f"rank-{r}.json.gz": gzip.compress(rank_trace(RUN, r), mtime=0) for r in range(4)}
    # named without its rank, which a file name would otherwise give
    del files["rank-1.json.gz"]
    files["unnamed.json.gz"] = gzip.compress(_edited(1, _info("rank", BIG)), mtime=0)
    files["rank-2.json.gz"] = gzip.compress(_edited(2, _kernel_dur(BIG)), mtime=0)
    files["rank-3.json.gz"] = gzip.compress(_edited(3, _kernel_dur(1e23)), mtime=0)
    traceset = upload(api, files, {"parallelism": {"tp": 2, "dp": 2}})
    inspection = inspected(api, traceset["id"])["inspection"]
    assert inspection["status"] == "done", inspection
    by_file = {f["file"]: f for f in inspection["files"]}
    assert (
        "distributedInfo.rank is 100000000000000000000000" in by_file["unnamed.json.gz"]["problem"]
    )
    assert by_file["rank-0.json.gz"]["problem"] is None
    assert inspection["ranksFound"] == [0, 2, 3]
    figures = {r["file"]: r for r in inspection["perRank"]}
    assert set(figures) == set(files)
    assert figures["rank-0.json.gz"]["steps"]["count"] == 3
    assert "dur" in (figures["rank-2.json.gz"]["problem"] or "")
    assert "dur" in (figures["rank-3.json.gz"]["problem"] or "")
