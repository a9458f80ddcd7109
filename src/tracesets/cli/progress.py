"""Progress of an upload or a download: rich bars on a terminal (``bars``), plain lines
elsewhere.

One overall bar shows bytes, files arrived out of all, speed and time left; below it, a
row for each file in flight (a few: as many as are sent at once), however many
thousand files there are. Plain lines (a log, CI, a pipe) say when the work starts,
each tenth of the way with the files arrived, and when it is done. Both go to stderr,
and both take callbacks from several threads at once.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Final, Protocol

from tracesets.cli.output import size, stderr_console, warn

STEP: Final = 10  # percent between plain lines


class Display(Protocol):
    def hashed(self, done: int, total: int) -> None: ...

    def moved(self, done: int, total: int) -> None: ...

    def files(self, arrived: int, count: int, in_flight: list[str]) -> None: ...


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


#: What rich reads to take a stream for a terminal, or not, whatever ``isatty`` says.
TERMINAL_VARIABLES: Final = ("FORCE_TERMINAL", "FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE")


def _plainly_not_a_terminal() -> bool:
    """stderr is no terminal and nothing tells rich otherwise: rich would say the same."""
    if any(name in os.environ for name in TERMINAL_VARIABLES):
        return False
    isatty = getattr(sys.stderr, "isatty", None)
    try:
        return isatty is not None and not isatty()
    except ValueError:  # closed
        return False


@contextmanager
def display(verb: str, past: str, files: int, total: int, *, hashing: bool) -> Iterator[Display]:
    """``verb``/``past``: "uploading"/"uploaded", "downloading"/"downloaded". Rich is
    imported only for a terminal: a script's upload does not pay for it (20 ms of CPU)."""
    if _plainly_not_a_terminal() or not (console := stderr_console()).is_terminal:
        yield Lines(verb, past, files, total)
        return
    from tracesets.cli.bars import bars

    with bars(console, verb, total, hashing=hashing) as shown:
        yield shown
