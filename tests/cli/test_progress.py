"""The progress of a job's upload: one overall bar and the few files in flight, never a
row per file, however many thousand files there are."""

from __future__ import annotations

import io

import pytest
from rich.console import Console
from rich.progress import Progress

from tracesets.cli.bars import FLIGHT_ROWS, Bars
from tracesets.cli.progress import Lines, display

FILES = 4_096


def names(first: int, count: int) -> list[str]:
    return [f"rank-{rank:05d}.pt.trace.json.gz" for rank in range(first, first + count)]


def test_the_bars_are_one_overall_bar_and_the_files_in_flight() -> None:
    console = Console(file=io.StringIO(), force_terminal=True, width=120)
    with Progress(console=console) as progress:
        bars = Bars(progress, "uploading", FILES * 34_000, hashing=True)
        bars.hashed(FILES * 34_000, FILES * 34_000)
        bars.files(0, FILES, [])
        assert len(progress.tasks) == 2  # hashing, and the upload
        for arrived in range(0, FILES, 8):
            bars.files(arrived, FILES, names(arrived, 8))
            bars.moved(arrived * 34_000, FILES * 34_000)
            assert len(progress.tasks) == 2 + 8
        upload = progress.tasks[1]
        assert upload.description == f"Uploading {FILES - 8:,}/{FILES:,} files"
        assert [t.description for t in progress.tasks[2:]] == [
            f"  {name}" for name in names(FILES - 8, 8)
        ]
        bars.files(FILES, FILES, [])
        assert len(progress.tasks) == 2
        assert progress.tasks[1].description == f"Uploading {FILES:,}/{FILES:,} files"


def test_more_files_in_flight_than_rows_are_counted_on_the_last_row() -> None:
    console = Console(file=io.StringIO(), force_terminal=True, width=120)
    with Progress(console=console) as progress:
        bars = Bars(progress, "uploading", 1, hashing=False)
        bars.files(0, 100, names(0, 64))
        rows = [t.description for t in progress.tasks[1:]]
        assert len(rows) == FLIGHT_ROWS
        assert rows[-1].endswith(f"and {64 - FLIGHT_ROWS} more")


def test_plain_lines_say_the_files_arrived_at_each_tenth(
    capsys: pytest.CaptureFixture[str],
) -> None:
    lines = Lines("uploading", "uploaded", FILES, FILES * 34_000)
    lines.files(0, FILES, [])
    for arrived in range(1, FILES + 1):
        lines.files(arrived, FILES, names(arrived, 1))
        lines.moved(arrived * 34_000, FILES * 34_000)
    said = capsys.readouterr().err.splitlines()
    assert said[0] == f"uploading {FILES:,} files, 139.3 MB"
    assert len(said) <= 11  # the first line, a tenth at a time, the end
    assert any(f"  2,048/{FILES:,} files  " in line and " 50% " in line for line in said)
    assert said[-1].startswith("uploaded 139.3 MB in ")


def test_a_display_off_a_terminal_is_plain_lines(capsys: pytest.CaptureFixture[str]) -> None:
    with display("uploading", "uploaded", 2, 10, hashing=True) as shown:
        assert isinstance(shown, Lines)
        shown.files(1, 2, ["b"])
        shown.moved(5, 10)
    assert "uploading  50%  5 bytes / 10 bytes  1/2 files  " in capsys.readouterr().err
