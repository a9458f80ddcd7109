"""Where one ``tracesets upload`` spends its time: each step's start and end, in-process.

Runs the command (``tracesets.cli.main``) in this process with its steps timed: the
imports, the walk of the folder, the header check, each request, the hashing ahead
(``Hashed``: waiting for the next batch's digests), the PUTs (``PutsDone``: waiting for
the last ones), the report. Start-up before this script's first line (the interpreter)
is not counted; ``python -X importtime`` splits the imports further. Each PUT's start and
end are kept too: the summary says when the first byte went, how long the PUTs ran, and
for how much of that time fewer PUTs were in flight than the command may run at once
(slots left idle: waiting for a declaration, or for hashing).

    TRACESETS_URL=… TRACESETS_TOKEN=… .venv/bin/python bench/cli_timeline.py DIR --rank-count 64

The arguments are ``tracesets upload``'s; the timeline goes to stderr after the run.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from typing import Any

STARTED = time.perf_counter()
LINES: list[str] = []
#: (start, end) of each PUT, in ms.
PUTS: list[tuple[float, float]] = []
PUTS_LOCK = threading.Lock()


def ms() -> float:
    return (time.perf_counter() - STARTED) * 1000


def timed(name: Callable[..., str], run: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        began = ms()
        try:
            return run(*args, **kwargs)
        finally:
            LINES.append(f"{began:8.1f} – {ms():8.1f} ms  {name(*args)}")

    return wrapper


def timed_put(run: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        began = ms()
        try:
            return run(*args, **kwargs)
        finally:
            with PUTS_LOCK:
                PUTS.append((began, ms()))

    return wrapper


def puts_summary(slots: int) -> str:
    """When the PUTs ran, and the time fewer than ``slots`` were in flight."""
    if not PUTS:
        return "no PUTs"
    first = min(start for start, _ in PUTS)
    last = max(end for _, end in PUTS)
    edges = sorted([(start, 1) for start, _ in PUTS] + [(end, -1) for _, end in PUTS])
    idle, flying, since = 0.0, 0, first
    for when, change in edges:
        if flying < slots:
            idle += (when - since) * (slots - flying) / slots
        flying, since = flying + change, when
    return (
        f"{len(PUTS)} PUTs: first started {first:.1f} ms, last ended {last:.1f} ms "
        f"({last - first:.1f} ms); slots idle {idle:.1f} ms of it (of {slots} slots)"
    )


def main() -> None:
    from tracesets.cli import main as cli
    from tracesets.cli import upload
    from tracesets.client.blocking import BlockingIO

    LINES.append(f"{0:8.1f} – {ms():8.1f} ms  imports")

    def step_name(io: BlockingIO, step: Any, *rest: Any) -> str:
        return f"{type(step).__name__} {getattr(step, 'what', '')}".rstrip()

    BlockingIO._perform = timed(step_name, BlockingIO._perform)  # type: ignore[method-assign]
    BlockingIO._put = timed_put(BlockingIO._put)  # type: ignore[method-assign]
    for name in ("collect", "check_against_traces", "_send", "_report"):
        setattr(upload, name, timed(lambda *a, n=name: n, getattr(upload, name)))
    sys.argv = ["tracesets", "upload", *sys.argv[1:]]
    try:
        cli.main()
    except SystemExit:
        pass
    finally:
        LINES.append(f"{ms():8.1f} ms  exit")
        LINES.append(puts_summary(_concurrency(sys.argv)))
        print("\n".join(LINES), file=sys.stderr)


def _concurrency(argv: list[str]) -> int:
    """The PUTs the command may run at once: its ``--concurrency``, 8 unless given."""
    if "--concurrency" in argv[:-1]:
        return int(argv[argv.index("--concurrency") + 1])
    return 8


if __name__ == "__main__":
    main()
