"""Progress callbacks: ``callback(bytes_done, bytes_total)``, called as bytes move."""

from __future__ import annotations

import threading
from collections.abc import Callable

ProgressCallback = Callable[[int, int], None]


class ProgressCounter:
    """Bytes done out of a known total, shared by the threads (or tasks) moving them.

    ``add`` takes negative counts too: a PUT that is retried gives its bytes back.
    """

    def __init__(self, total: int, callback: ProgressCallback | None) -> None:
        self.total = total
        self.done = 0
        self._callback = callback
        self._lock = threading.Lock()

    def start(self) -> None:
        if self._callback is not None:
            self._callback(0, self.total)

    def add(self, count: int) -> None:
        with self._lock:
            self.done += count
            if self._callback is not None:
                self._callback(self.done, self.total)
