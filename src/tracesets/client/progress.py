"""Progress callbacks: ``callback(bytes_done, bytes_total)``, called as bytes move."""

from __future__ import annotations

import threading
from collections.abc import Callable

ProgressCallback = Callable[[int, int], None]
#: ``callback(arrived, count, in_flight)``: of ``count`` transfers (a file each, or a part
#: of one), ``arrived`` are done; ``in_flight`` names those being sent, oldest first.
FilesCallback = Callable[[int, int, list[str]], None]


class ProgressCounter:
    """Bytes done out of a known total, shared by the threads (or tasks) moving them.

    ``add`` takes negative counts too: a PUT that is retried gives its bytes back.
    """

    def __init__(
        self,
        total: int,
        callback: ProgressCallback | None,
        files: FilesCallback | None = None,
        count: int = 0,
    ) -> None:
        self.total = total
        self.done = 0
        self.count = count
        self.arrived = 0
        self._flying: list[str] = []
        self._callback = callback
        self._files = files
        self._lock = threading.Lock()

    def expect(self, count: int) -> None:
        """``count`` more transfers to come than said (a file sent in parts)."""
        with self._lock:
            self.count += count
            self._tell_files()

    def start(self) -> None:
        if self._callback is not None:
            self._callback(0, self.total)
        if self._files is not None:
            self._files(0, self.count, [])

    def began(self, label: str) -> None:
        with self._lock:
            self._flying.append(label)
            self._tell_files()

    def ended(self, label: str) -> None:
        with self._lock:
            self._flying.remove(label)
            self.arrived += 1
            self._tell_files()

    def _tell_files(self) -> None:
        if self._files is not None:
            self._files(self.arrived, self.count, list(self._flying))

    def add(self, count: int) -> None:
        with self._lock:
            self.done += count
            if self._callback is not None:
                self._callback(self.done, self.total)
