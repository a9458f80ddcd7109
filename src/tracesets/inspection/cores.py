"""The cores this process may run on: how many processes read traces side by side.

The command line and the service's inspection queue both size their pools of reading
processes by it; a light module of its own, since the command line must not import the
service's reading (and with it the analysis) to learn it.
"""

from __future__ import annotations

import os


def cores() -> int:
    """The cores this process may run on (its affinity, where the system has one)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
