"""Reading a folder of traces among several processes gives what one process gives."""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import pytest

from tests.analysis.run_writer import Run, write_run
from tracesets.client import reading
from tracesets.client.files import LocalFile, collect
from tracesets.client.reading import PARALLEL_FROM, LocalReading, read_file, read_files
from tracesets.inspection import FileSource


def job(tmp_path: Path) -> list[LocalFile]:
    """A run of 2 x 40 ranks with a slow rank, a broken trace, a duplicate and a supporting file."""
    folder = tmp_path / "run"
    folder.mkdir()
    write_run(folder, Run(tp=2, dp=40, steps=2, kernels_per_step=3, slow={7: 2.0}))
    (folder / "rank-5.json.gz").rename(folder / "rank-5-first.json.gz")
    write_run(tmp_path / "again", Run(tp=2, dp=40, steps=2, kernels_per_step=3))
    (tmp_path / "again" / "rank-5.json.gz").rename(folder / "rank-5.json.gz")
    (folder / "rank-9.json.gz").write_bytes(b"\x1f\x8b not really gzip")
    notes = tmp_path / "notes.txt"
    notes.write_text("how the run was launched")
    return collect([folder], [notes])


def test_many_processes_read_what_one_reads_in_the_same_order(tmp_path: Path) -> None:
    files = job(tmp_path)
    assert len(files) > 2 * PARALLEL_FROM  # enough for two processes
    alone = read_files(files, figures=True, workers=1)
    shared = read_files(files, figures=True, workers=2)
    assert shared == alone
    names = [f.name for f in files if f.role == "primary"]
    assert [f.file for f in shared.findings] == names  # supporting files are not traces
    assert [t.file for t in shared.traces] == [n for n in names if n != "rank-9.json.gz"]
    broken = next(f for f in shared.findings if f.file == "rank-9.json.gz")
    assert not broken.readable and broken.problem
    ranks = sorted(f.rank for f in shared.findings if f.rank is not None)
    assert ranks == sorted([*(r for r in range(80) if r != 9), 5])


def test_headers_alone_read_no_figures(tmp_path: Path) -> None:
    files = job(tmp_path)
    headers = read_files(files, figures=False, workers=2)
    assert headers.traces == []
    assert headers.findings == read_files(files, figures=True, workers=1).findings


def test_headers_of_fewer_than_a_thousand_files_start_no_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``tracesets upload``'s check reads headers only: a second process would cost more
    than the 80 files' headers."""
    files = job(tmp_path)

    class NoPoolWanted:
        def __init__(self, max_workers: int) -> None:
            raise AssertionError("a process pool for headers alone")

    monkeypatch.setattr(reading, "ProcessPoolExecutor", NoPoolWanted)
    assert read_files(files, figures=False, workers=2).findings


def test_a_file_gone_since_it_was_listed_is_a_finding_that_says_so(tmp_path: Path) -> None:
    (gone,) = [f for f in job(tmp_path) if f.name == "rank-3.json.gz"]
    gone.path.unlink()
    reading = read_file(gone, figures=True)
    assert reading.traces == []
    (finding,) = reading.findings
    assert not finding.readable and finding.size == gone.size
    assert finding.problem is not None and finding.problem.startswith("could not be read: ")


def test_without_processes_this_process_reads_them_all(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = job(tmp_path)
    alone = read_files(files, figures=True, workers=1)

    class NoSharedMemory:
        def __init__(self, max_workers: int) -> None:
            raise OSError("no /dev/shm for the pool's locks")

    with monkeypatch.context() as patched:
        patched.setattr(reading, "ProcessPoolExecutor", NoSharedMemory)
        assert read_files(files, figures=True, workers=2) == alone

    monkeypatch.setattr(reading, "_read_batch", _killed_in_a_worker)
    assert read_files(files, figures=True, workers=2) == alone


PARENT = os.getpid()
READ_BATCH = reading._read_batch


def _killed_in_a_worker(batch: Sequence[LocalFile], figures: bool) -> list[LocalReading]:
    """A batch that ends its worker process, as the kernel's OOM killer would."""
    if os.getpid() != PARENT:
        os._exit(9)
    return READ_BATCH(batch, figures)


def test_headers_alone_read_a_large_files_head_not_all_of_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``tracesets upload``'s check reads where a header is, not megabytes of events."""
    folder = tmp_path / "run"
    folder.mkdir()
    events = [
        {"ph": "X", "cat": "kernel", "name": f"gemm {i}", "ts": i, "dur": 1, "pid": 0, "tid": 7}
        for i in range(40_000)
    ]
    trace = {"distributedInfo": {"rank": 3, "world_size": 8}, "traceEvents": events}
    (folder / "rank-3.json").write_text(json.dumps(trace))
    (folder / "noise.bin").write_bytes(os.urandom(2 * 1024 * 1024))
    files = collect([folder], [])
    read: Counter[str] = Counter()

    class CountedSource(FileSource):
        def read(self, offset: int, length: int) -> bytes:
            data = super().read(offset, length)
            read[Path(self.path).name] += len(data)
            return data

    monkeypatch.setattr(reading, "FileSource", CountedSource)
    findings = {f.file: f for f in read_files(files, figures=False, workers=1).findings}
    assert (findings["rank-3.json"].rank, findings["rank-3.json"].world_size) == (3, 8)
    assert findings["noise.bin"].format == "unknown"
    for file in files:
        assert file.size > 2_000_000
        assert 0 < read[file.name] < file.size // 16, file.name  # a read ahead or two
    read.clear()
    read_files(files, figures=True, workers=1)  # the figures' pass reads them whole, once
    assert read == {file.name: file.size for file in files}
