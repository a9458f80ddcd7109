"""Progress of an upload or a download: rich bars on a terminal, plain lines elsewhere.

One overall bar shows bytes, files arrived out of all, speed and time left; below it, a
row for each file in flight (a few: as many as are sent at once), however many
thousand files there are. Plain lines (a log, CI, a pipe) say when the work starts,
each tenth of the way with the files arrived, and when it is done. Both go to stderr,
and both take callbacks from several threads at once.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Final, Protocol

from rich.console import RenderableType
from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    ProgressColumn,
    Task,
    TaskID,
    TextColumn,
    TimeRemainingColumn,
    TransferSpeedColumn,
)

from tracesets.cli.output import size, stderr, warn

STEP: Final = 10  # percent between plain lines
#: Rows of files in flight at the most; more are counted on the last row.
FLIGHT_ROWS: Final = 8


class Display(Protocol):
    def hashed(self, done: int, total: int) -> None: ...

    def moved(self, done: int, total: int) -> None: ...

    def files(self, arrived: int, count: int, in_flight: list[str]) -> None: ...


class BarOnly(ProgressColumn):
    """A column of the overall bars; blank on the rows naming files in flight."""

    def __init__(self, inner: ProgressColumn) -> None:
        super().__init__()
        self.inner = inner

    def render(self, task: Task) -> RenderableType:
        return "" if task.fields.get("row") else self.inner.render(task)


class Bars:
    def __init__(self, progress: Progress, verb: str, total: int, *, hashing: bool) -> None:
        self._progress = progress
        self._hash: TaskID | None = progress.add_task("Hashing", total=total) if hashing else None
        self._verb = verb.capitalize()
        self._move = progress.add_task(self._verb, total=total, start=not hashing)
        self._started = not hashing
        self._rows: list[TaskID] = []
        self._lock = threading.Lock()

    def hashed(self, done: int, total: int) -> None:
        if self._hash is not None:
            self._progress.update(self._hash, completed=done, total=total)

    def moved(self, done: int, total: int) -> None:
        if not self._started:
            self._started = True
            self._progress.start_task(self._move)
        self._progress.update(self._move, completed=done, total=total)

    def files(self, arrived: int, count: int, in_flight: list[str]) -> None:
        with self._lock:
            described = f"{self._verb} {arrived:,}/{count:,} files"
            self._progress.update(self._move, description=described)
            shown = in_flight[:FLIGHT_ROWS]
            if len(in_flight) > FLIGHT_ROWS:
                shown[-1] = f"{shown[-1]} and {len(in_flight) - FLIGHT_ROWS:,} more"
            while len(self._rows) < len(shown):
                self._rows.append(self._progress.add_task("", total=None, start=False, row=True))
            while len(self._rows) > len(shown):
                self._progress.remove_task(self._rows.pop())
            for row, name in zip(self._rows, shown, strict=True):
                self._progress.update(row, description=f"  {name}")


class Lines:
    def __init__(self, verb: str, past: str, files: int, total: int) -> None:
        self._verb = verb
        self._past = past
        self._lock = threading.Lock()
        self._hash_started = time.monotonic()
        self._hash_done = False
        self._started: float | None = None
        self._shown = -1
        self._arrived = ""
        warn(f"{verb} {files:,} file{'' if files == 1 else 's'}, {size(total)}")

    def hashed(self, done: int, total: int) -> None:
        with self._lock:
            if done >= total and not self._hash_done:
                self._hash_done = True
                took = time.monotonic() - self._hash_started
                warn(f"hashed {size(total)} in {took:.1f} s")

    def files(self, arrived: int, count: int, in_flight: list[str]) -> None:
        with self._lock:
            self._arrived = f"  {arrived:,}/{count:,} files"

    def moved(self, done: int, total: int) -> None:
        with self._lock:
            now = time.monotonic()
            if self._started is None:
                self._started = now
            percent = 100 if total == 0 else done * 100 // total
            step = percent // STEP * STEP
            if step <= self._shown:
                return
            self._shown = step
            took = now - self._started
            rate = done / took if took > 0 else 0.0
            if step == 100:
                warn(f"{self._past} {size(total)} in {took:.1f} s ({size(int(rate))}/s)")
            elif step > 0:
                left = timedelta(seconds=round((total - done) / rate)) if rate else "?"
                warn(
                    f"{self._verb} {step:3d}%  {size(done)} / {size(total)}{self._arrived}  "
                    f"{size(int(rate))}/s  {left} left"
                )


@contextmanager
def display(verb: str, past: str, files: int, total: int, *, hashing: bool) -> Iterator[Display]:
    """``verb``/``past``: "uploading"/"uploaded", "downloading"/"downloaded"."""
    if not stderr.is_terminal:
        yield Lines(verb, past, files, total)
        return
    columns = (
        TextColumn("[progress.description]{task.description}"),
        *(
            BarOnly(column)
            for column in (
                BarColumn(),
                DownloadColumn(),
                TransferSpeedColumn(),
                TimeRemainingColumn(),
            )
        ),
    )
    with Progress(*columns, console=stderr) as progress:
        yield Bars(progress, verb, total, hashing=hashing)
