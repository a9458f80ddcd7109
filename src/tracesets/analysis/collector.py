"""Python's cyclic garbage collector run less often while traces are read.

Each trace's events are thousands of fresh dicts, alive until they are folded in. By
default a collection runs every 700 new objects, those alive are promoted, and every
so often a full collection walks every object the process holds (a command's or a
service's imports: tens of thousands): about a third of the CPU time of reading a
rank's trace of 34 KB. The events hold no cycles, so collecting them does nothing.

``fewer_collections`` freezes what exists (it is never walked again until unfrozen) and
collects the youngest objects every ``YOUNG`` allocations instead of 700, so cyclic
garbage still goes, within a bounded number of objects. Threads may overlap: the first
to enter changes the collector, the last to leave restores it.
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator
from typing import Final

#: Allocations between two collections of the youngest objects (Python's default: 700).
YOUNG: Final = 70_000


class _Readers:
    """How many threads are reading, and the collector's thresholds from before."""

    lock = threading.Lock()
    inside = 0
    saved: tuple[int, ...] = ()


@contextlib.contextmanager
def fewer_collections() -> Iterator[None]:
    with _Readers.lock:
        if _Readers.inside == 0:
            _Readers.saved = gc.get_threshold()
            gc.freeze()
            gc.set_threshold(YOUNG, *_Readers.saved[1:])
        _Readers.inside += 1
    try:
        yield
    finally:
        with _Readers.lock:
            _Readers.inside -= 1
            if _Readers.inside == 0:
                gc.set_threshold(*_Readers.saved)
                gc.unfreeze()
