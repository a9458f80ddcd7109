"""Progress of an upload or a download: rich bars on a terminal, plain lines elsewhere.

The bars show bytes, speed and time left. Plain lines (a log, CI, a pipe) say when the
work starts, each tenth of the way, and when it is done. Both go to stderr, and both
take callbacks from several threads at once.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Final, Protocol

from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeRemainingColumn,
    TransferSpeedColumn,
)

from tracesets.cli.output import size, stderr, warn

STEP: Final = 10  # percent between plain lines


class Display(Protocol):
    def hashed(self, done: int, total: int) -> None: ...

    def moved(self, done: int, total: int) -> None: ...


class Bars:
    def __init__(self, progress: Progress, verb: str, total: int, *, hashing: bool) -> None:
        self._progress = progress
        self._hash: TaskID | None = progress.add_task("Hashing", total=total) if hashing else None
        self._move = progress.add_task(verb.capitalize(), total=total, start=not hashing)
        self._started = not hashing

    def hashed(self, done: int, total: int) -> None:
        if self._hash is not None:
            self._progress.update(self._hash, completed=done, total=total)

    def moved(self, done: int, total: int) -> None:
        if not self._started:
            self._started = True
            self._progress.start_task(self._move)
        self._progress.update(self._move, completed=done, total=total)


class Lines:
    def __init__(self, verb: str, past: str, files: int, total: int) -> None:
        self._verb = verb
        self._past = past
        self._lock = threading.Lock()
        self._hash_started = time.monotonic()
        self._hash_done = False
        self._started: float | None = None
        self._shown = -1
        warn(f"{verb} {files} file{'' if files == 1 else 's'}, {size(total)}")

    def hashed(self, done: int, total: int) -> None:
        with self._lock:
            if done >= total and not self._hash_done:
                self._hash_done = True
                took = time.monotonic() - self._hash_started
                warn(f"hashed {size(total)} in {took:.1f} s")

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
                    f"{self._verb} {step:3d}%  {size(done)} / {size(total)}  "
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
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=stderr) as progress:
        yield Bars(progress, verb, total, hashing=hashing)
