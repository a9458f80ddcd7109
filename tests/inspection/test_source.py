"""Byte sources and the seekable file over them: one suite for each kind of source."""

from __future__ import annotations

import gzip
import io
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.inspection.kineto_writer import kineto_trace
from tracesets.analysis import analyze_file
from tracesets.inspection import (
    ByteSource,
    BytesSource,
    FileSource,
    SliceSource,
    SourceError,
    inspect_file,
    open_source,
)
from tracesets.inspection.decompress import GzipReader, Truncated
from tracesets.inspection.source import read_once

DATA = bytes(range(256)) * 1000


def file_source(tmp_path: Path) -> ByteSource:
    path = tmp_path / "data"
    path.write_bytes(DATA)
    return FileSource(path)


def bytes_source(tmp_path: Path) -> ByteSource:
    return BytesSource(DATA)


def slice_source(tmp_path: Path) -> ByteSource:
    return SliceSource(BytesSource(b"x" * 100 + DATA + b"y" * 100), 100, len(DATA))


SOURCES = [file_source, bytes_source, slice_source]


@pytest.mark.parametrize("make", SOURCES)
def test_reads_by_offset_and_short_only_at_the_end(
    make: Callable[[Path], ByteSource], tmp_path: Path
) -> None:
    source = make(tmp_path)
    assert source.size == len(DATA)
    assert source.read(0, 10) == DATA[:10]
    assert source.read(1000, 5000) == DATA[1000:6000]
    assert source.read(len(DATA) - 3, 10) == DATA[-3:]
    assert source.read(len(DATA), 10) == b""


@pytest.mark.parametrize("make", SOURCES)
def test_the_seekable_file_over_a_source(
    make: Callable[[Path], ByteSource], tmp_path: Path
) -> None:
    with open_source(make(tmp_path)) as handle:
        assert handle.seekable() and handle.readable()
        assert handle.read(4) == DATA[:4]
        assert handle.seek(-10, io.SEEK_END) == len(DATA) - 10
        assert handle.read() == DATA[-10:]
        handle.seek(500)
        handle.seek(20, io.SEEK_CUR)
        assert handle.tell() == 520 and handle.read(3) == DATA[520:523]
        with pytest.raises(OSError):
            handle.seek(-1)


class Recording:
    """A source that counts its reads, as an S3 ranged GET would cost."""

    def __init__(self, data: bytes) -> None:
        self._data = data
        self.reads: list[tuple[int, int]] = []

    @property
    def size(self) -> int:
        return len(self._data)

    def read(self, offset: int, length: int) -> bytes:
        self.reads.append((offset, length))
        return self._data[offset : offset + length]


def test_a_zip_of_64_ranks_costs_a_few_reads_per_member() -> None:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for rank in range(64):
            archive.writestr(f"rank{rank}.json", kineto_trace(rank, 64, events=20))
    source = Recording(out.getvalue())
    findings = inspect_file("traces.zip", source)
    assert [f.rank for f in findings] == list(range(64))
    assert len(source.reads) <= 4 + 2 * 64


def test_a_source_that_fails_is_a_source_error_not_a_finding() -> None:
    class Broken(Recording):
        def read(self, offset: int, length: int) -> bytes:
            if offset > 0:
                raise OSError("disk error")
            return super().read(offset, length)

    with pytest.raises(SourceError, match="disk error"):
        inspect_file("t.json", Broken(kineto_trace(0, 1, layout="tail", events=2000)))


def test_gzip_reader_says_when_the_stream_stops_early() -> None:
    data = gzip.compress(b"x" * 100_000)[:-20]
    reader = GzipReader(io.BytesIO(data))
    with pytest.raises(Truncated):
        while reader.read(4096):
            pass


def test_a_small_file_read_once_costs_one_request_for_findings_and_figures() -> None:
    trace = gzip.compress(kineto_trace(3, 8, events=200))
    direct = Recording(trace)
    expected = (inspect_file("rank3.json.gz", direct), analyze_file("rank3.json.gz", direct))
    assert len(direct.reads) >= 3  # sniff, head, then the figures' stream
    counted = Recording(trace)
    source = read_once(counted)
    found = (inspect_file("rank3.json.gz", source), analyze_file("rank3.json.gz", source))
    assert counted.reads == [(0, len(trace))]
    assert found == expected and found[0][0].rank == 3


def test_a_file_over_the_limit_is_left_to_ranged_reads() -> None:
    counted = Recording(kineto_trace(0, 1, events=200))
    assert read_once(counted, limit=counted.size - 1) is counted
    assert counted.reads == []


def test_a_source_that_fails_its_one_read_is_a_source_error() -> None:
    class Broken(Recording):
        def read(self, offset: int, length: int) -> bytes:
            raise OSError("disk error")

    with pytest.raises(SourceError, match="disk error"):
        read_once(Broken(kineto_trace(0, 1, events=20)))
