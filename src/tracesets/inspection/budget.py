"""The CPU time reading one file may take, and the stop when it is spent.

Reading is linear in a file's bytes, but a file may hold gigabytes, and every file of
every traceset is read by the same few processes: one file must not hold a process for
hours. So reading a file (its figures, then its findings) runs under a budget of CPU
seconds of the process reading it, ``TRACESETS_INSPECT_FILE_CPU_SECONDS`` (300 unless
set; the service and ``tracesets worker`` refuse at start a value that is not a whole
number from 0 to 86,400, and a process reading without them falls back to 300), checked between
blocks (the trace scanner's, the decompressor's, the tail's). Past it, ``OverBudget`` is
raised, which the readers turn into that file's finding like any bad bytes; the other
files are read as ever.

The budget is the reading's own (a context variable): a reading nested in another (the
findings' pass inside a file's reading) spends the file's budget, not a new one.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Final

from tracesets.settings import SettingsError, file_cpu_seconds

SETTING: Final = "TRACESETS_INSPECT_FILE_CPU_SECONDS"
DEFAULT_SECONDS: Final = 300.0

#: The CPU seconds used so far by this process (a test's own clock in tests).
clock: Callable[[], float] = time.process_time


class OverBudget(Exception):
    """Reading one file took more CPU time than its budget."""


@dataclass(frozen=True, slots=True)
class _Budget:
    seconds: float
    clock: Callable[[], float]
    start: float


_current: ContextVar[_Budget | None] = ContextVar("tracesets_file_budget", default=None)


def budget_seconds(environ: Mapping[str, str] | None = None) -> float:
    """The setting's value: CPU seconds one file's reading may take."""
    try:
        return file_cpu_seconds(os.environ if environ is None else environ)
    except SettingsError:  # refused at start by the service and the workers
        return DEFAULT_SECONDS


@contextmanager
def file_budget() -> Iterator[None]:
    """Read one file within the budget (the enclosing reading's, when there is one)."""
    if _current.get() is not None:
        yield
        return
    token = _current.set(_Budget(budget_seconds(), clock, clock()))
    try:
        yield
    finally:
        _current.reset(token)


def spend() -> None:
    """Raise ``OverBudget`` when the reading under way has used up its CPU time."""
    budget = _current.get()
    if budget is not None and budget.clock() - budget.start >= budget.seconds:
        raise OverBudget(
            f"not read to its end: reading it took more than {budget.seconds:g} s of CPU "
            f"time, the budget of one file ({SETTING})"
        )
