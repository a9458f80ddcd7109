"""A trace damaged in its middle, in gzip or in a zip: the figures name the damage, as
inspection does, not the bad JSON the damaged bytes inflate into, and a zip member stored
uncompressed is checked against its CRC-32 as an inflated one is; a plain trace is not
read past its first bad event to find out."""

from __future__ import annotations

import io
import zipfile
import zlib
from collections.abc import Iterator

import pytest

from tests.inspection.kineto_writer import gzipped, kineto_trace
from tracesets.analysis import analyze_file, analyze_stream
from tracesets.analysis.rank import RankAnalysis
from tracesets.inspection import BytesSource, decompress, inspect_file
from tracesets.inspection.budget import OverBudget
from tracesets.inspection.source import SourceError

TRACE = kineto_trace(3, 8, layout="tail", events=60_000)
EVENT = b'{"name": "k", "ph": "X", "ts": 1, "dur": 2}'
BAD_JSON = b'{"traceEvents": [' + EVENT + b', {"name": oops}, ' + EVENT + b", " + EVENT
BAD_CRC = "not a readable zip archive (Bad CRC-32 for file 'rank-3.json')"


@pytest.fixture(scope="module")
def plain() -> RankAnalysis:
    """TRACE's figures read as a plain file."""
    (trace,) = analyze_file("rank-3.json", BytesSource(TRACE))
    assert trace.analysis.problem is None
    return trace.analysis


def damaged(data: bytes, at: float) -> bytes:
    """``data`` with 64 bytes flipped at the fraction ``at`` of its length."""
    damaged = bytearray(data)
    start = int(len(data) * at)
    damaged[start : start + 64] = bytes(b ^ 0x55 for b in damaged[start : start + 64])
    return bytes(damaged)


def zipped(name: str, data: bytes, how: int = zipfile.ZIP_DEFLATED) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", how) as archive:
        archive.writestr(name, data)
    return out.getvalue()


@pytest.mark.parametrize("at", [0.3, 0.5, 0.9])
def test_a_gzip_damaged_in_its_middle_is_named_corrupt_with_the_events_before(at: float) -> None:
    data = damaged(gzipped(TRACE), at)
    assert len(data) > decompress.WHOLE_INPUT_LIMIT  # read step by step, not in one call
    ((trace,), (finding,)) = (
        analyze_file("rank-3.json.gz", BytesSource(data)),
        inspect_file("rank-3.json.gz", BytesSource(data)),
    )
    assert (trace.analysis.problem or "").startswith("the compressed data is corrupt (")
    assert trace.analysis.problem == finding.problem
    assert 0 < trace.analysis.events < 60_000


def test_a_zip_member_damaged_in_its_middle_is_named_by_its_crc() -> None:
    data = damaged(zipped("rank-3.json", TRACE), 0.5)
    ((trace,), (finding,)) = (
        analyze_file("ranks.zip", BytesSource(data)),
        inspect_file("ranks.zip", BytesSource(data)),
    )
    assert trace.member == "rank-3.json"
    assert trace.analysis.problem == BAD_CRC
    assert trace.analysis.problem == finding.problem
    assert 0 < trace.analysis.events < 60_000


def stored_damaged(at: int) -> bytes:
    """A zip of TRACE stored uncompressed, TRACE's byte ``at`` flipped in it."""
    data = bytearray(zipped("rank-3.json", TRACE, zipfile.ZIP_STORED))
    data[data.index(TRACE[:256]) + at] ^= 0x01
    return bytes(data)


def test_a_stored_zip_member_damaged_in_its_events_is_named_by_its_crc(
    plain: RankAnalysis,
) -> None:
    middle = TRACE.index(b'"ts"', len(TRACE) // 2)  # '"' becomes '#'
    (trace,) = analyze_file("ranks.zip", BytesSource(stored_damaged(middle)))
    assert trace.analysis.problem == BAD_CRC
    assert 0 < trace.analysis.events < plain.events


def test_a_stored_zip_member_still_json_once_damaged_is_named_by_its_crc(
    plain: RankAnalysis,
) -> None:
    name = b'"name": "'
    middle = TRACE.index(name, len(TRACE) // 2) + len(name)  # a letter of an event's name
    (trace,) = analyze_file("ranks.zip", BytesSource(stored_damaged(middle)))
    assert trace.analysis.problem == BAD_CRC
    assert 0 < trace.analysis.events <= plain.events


def test_an_intact_stored_zip_member_reads_as_the_plain_trace(plain: RankAnalysis) -> None:
    data = zipped("rank-3.json", TRACE, zipfile.ZIP_STORED)
    (trace,) = analyze_file("ranks.zip", BytesSource(data))
    assert trace.analysis == plain


def test_a_gzip_of_bad_json_keeps_the_json_s_problem() -> None:
    data = gzipped(TRACE[: len(TRACE) // 2] + b"not json" + TRACE[len(TRACE) // 2 :])
    assert len(data) > decompress.WHOLE_INPUT_LIMIT
    (trace,) = analyze_file("rank-3.json.gz", BytesSource(data))
    assert (trace.analysis.problem or "").startswith("the traceEvents array is not valid JSON")


class Counting(BytesSource):
    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.read_bytes = 0

    def read(self, offset: int, length: int) -> bytes:
        self.read_bytes += length
        return super().read(offset, length)


def test_a_plain_trace_is_not_read_past_its_first_bad_event() -> None:
    source = Counting(BAD_JSON + b", " + b", ".join([EVENT] * 2_000_000) + b"]}")
    (trace,) = analyze_file("rank-0.json", source)
    assert (trace.analysis.problem or "").startswith("the traceEvents array is not valid JSON")
    assert source.read_bytes < 8 * 1024 * 1024


class Inflating:
    """Bad JSON, then what the inflater says on the next read."""

    def __init__(self, then: Exception) -> None:
        self._reads: Iterator[bytes] = iter([BAD_JSON])
        self._then = then

    def read(self, size: int = -1, /) -> bytes:
        for data in self._reads:
            return data
        raise self._then


def test_the_damage_found_past_the_bad_json_is_the_problem() -> None:
    stream = Inflating(zlib.error("invalid stored block"))
    analysis = analyze_stream(stream, block=16, checked=True)
    assert analysis.problem == "the compressed data is corrupt (invalid stored block)"


def test_a_budget_spent_before_the_end_leaves_the_json_s_problem() -> None:
    analysis = analyze_stream(Inflating(OverBudget("spent")), block=16, checked=True)
    assert (analysis.problem or "").startswith("the traceEvents array is not valid JSON")


def test_a_storage_failure_past_the_bad_json_is_raised() -> None:
    with pytest.raises(SourceError):
        analyze_stream(Inflating(SourceError("the store went away")), block=16, checked=True)
