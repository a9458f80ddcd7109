"""Where one ``tracesets upload`` spends its time: each step's start and end, in-process.

Runs the command (``tracesets.cli.main``) in this process with its steps timed: the
imports, the walk of the folder, the header check, each request, the hashing ahead
(``Hashed``: waiting for the next batch's digests), the PUTs (``PutsDone``: waiting for
the last ones), the report. Start-up before this script's first line (the interpreter)
is not counted; ``python -X importtime`` splits the imports further.

    TRACESETS_URL=… TRACESETS_TOKEN=… .venv/bin/python bench/cli_timeline.py DIR --rank-count 64

The arguments are ``tracesets upload``'s; the timeline goes to stderr after the run.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

STARTED = time.perf_counter()
LINES: list[str] = []


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


def main() -> None:
    from tracesets.cli import main as cli
    from tracesets.cli import upload
    from tracesets.client.blocking import BlockingIO

    LINES.append(f"{0:8.1f} – {ms():8.1f} ms  imports")

    def step_name(io: BlockingIO, step: Any, *rest: Any) -> str:
        return f"{type(step).__name__} {getattr(step, 'what', '')}".rstrip()

    BlockingIO._perform = timed(step_name, BlockingIO._perform)  # type: ignore[method-assign]
    for name in ("collect", "check_against_traces", "_send", "_report"):
        setattr(upload, name, timed(lambda *a, n=name: n, getattr(upload, name)))
    sys.argv = ["tracesets", "upload", *sys.argv[1:]]
    try:
        cli.main()
    except SystemExit:
        pass
    finally:
        LINES.append(f"{ms():8.1f} ms  exit")
        print("\n".join(LINES), file=sys.stderr)


if __name__ == "__main__":
    main()
