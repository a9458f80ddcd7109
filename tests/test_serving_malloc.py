"""The serving process keeps its heap's top instead of handing it back after every body block."""

from __future__ import annotations

import os
import subprocess
import sys

from tracesets.api.serving import MALLOC_TUNING

# Allocates and frees 32 blocks of 256 KiB, as a PUT's body arrives, then prints how many
# bytes at the heap's top glibc keeps for the next ones (mallinfo2's keepcost).
_PROBE = """
import ctypes, os, sys
from tracesets.api.serving import tune_malloc
if sys.argv[1] == "tuned":
    tune_malloc()
class Info(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost".split())]
mallinfo2 = ctypes.CDLL(None).mallinfo2
mallinfo2.restype = Info
for _ in range(4):
    blocks = [os.urandom(256 * 1024) for _ in range(32)]
    del blocks
print(mallinfo2().keepcost, os.environ.get("MALLOC_TRIM_THRESHOLD_"), os.environ.get("MALLOC_MMAP_THRESHOLD_"))
"""


def _probe(mode: str, env: dict[str, str]) -> list[str]:
    clean = {k: v for k, v in os.environ.items() if k not in MALLOC_TUNING}
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, mode],
        env={**clean, **env},
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.split()


def test_the_tuned_heap_keeps_its_top_for_the_next_blocks() -> None:
    untuned = _probe("plain", {})
    tuned = _probe("tuned", {})
    assert int(untuned[0]) < 1024 * 1024  # handed back at once: faulted in again next time
    assert int(tuned[0]) >= 4 * 1024 * 1024
    # Workers uvicorn starts inherit the bounds through the environment.
    assert tuned[1:] == [
        MALLOC_TUNING["MALLOC_TRIM_THRESHOLD_"],
        MALLOC_TUNING["MALLOC_MMAP_THRESHOLD_"],
    ]


def test_the_environment_s_own_malloc_settings_win() -> None:
    own = _probe("tuned", {"MALLOC_TRIM_THRESHOLD_": "131072"})
    assert int(own[0]) < 1024 * 1024
    assert own[1:] == ["131072", MALLOC_TUNING["MALLOC_MMAP_THRESHOLD_"]]
