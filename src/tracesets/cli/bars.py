"""The progress bars on a terminal: one overall bar (bytes, files arrived out of all,
speed, time left) and below it a row for each file in flight (a few: as many as are sent
at once), however many thousand files there are. They take callbacks from several
threads at once."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Final

from rich.console import Console, RenderableType
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

#: Rows of files in flight at the most; more are counted on the last row.
FLIGHT_ROWS: Final = 8


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


@contextmanager
def bars(console: Console, verb: str, total: int, *, hashing: bool) -> Iterator[Bars]:
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
    with Progress(*columns, console=console) as progress:
        yield Bars(progress, verb, total, hashing=hashing)
