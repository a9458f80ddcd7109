"""The serving process: uvicorn and the app, without what the command line imported.

``tracesets serve`` migrates the database, makes the first token and prints its banner,
then replaces itself with this module (``os.execv``: the same process id, signals and
terminal). So the process that serves does not hold the command line's imports (typer,
rich, the client and the analysis, some 35 MiB of RSS) for its whole life.

    python -m tracesets.api.serving --host H --port P --workers N --limit-concurrency C
"""

from __future__ import annotations

import argparse
import ctypes
import os
import shutil
import sys
import tempfile
from typing import Any, Final

from tracesets.api import logs
from tracesets.settings import MULTIPROC_DIR, Settings

#: glibc's malloc, left to itself, hands the top of its heap back to the system as soon as
#: twice the last large block freed lies free there, and faults it in again, zeroed, for the
#: next one. A PUT's body arrives in blocks of 256 KB, each allocated and freed once or twice:
#: receiving 1 GiB took 5,600 ``brk`` calls and 1.1-1.3 s of the event loop's CPU,
#: 0.42-0.46 s with these bounds (16 MiB kept free at the heap's top at most; blocks under
#: 4 MiB from the heap). The environment's own settings win; workers started by uvicorn inherit them.
MALLOC_TUNING: Final = {
    "MALLOC_TRIM_THRESHOLD_": str(16 * 1024 * 1024),
    "MALLOC_MMAP_THRESHOLD_": str(4 * 1024 * 1024),
}
_M_TRIM_THRESHOLD: Final = -1  # mallopt's parameters, from glibc's malloc.h
_M_MMAP_THRESHOLD: Final = -3


def argv(host: str, port: int, workers: int, limit_concurrency: int) -> list[str]:
    """The command line that serves, for ``os.execv``."""
    return [
        sys.executable,
        "-m",
        "tracesets.api.serving",
        f"--host={host}",
        f"--port={port}",
        f"--workers={workers}",
        f"--limit-concurrency={limit_concurrency}",
    ]


def serve_instead(host: str, port: int, workers: int, limit_concurrency: int) -> None:
    """Become the serving process (never returns)."""
    sys.stdout.flush()
    sys.stderr.flush()
    command = argv(host, port, workers, limit_concurrency)
    os.execv(command[0], command)


def tune_malloc() -> None:
    """Apply ``MALLOC_TUNING`` to this process (set before it started, glibc reads the
    environment itself) and to the workers it starts."""
    untuned = {name: value for name, value in MALLOC_TUNING.items() if name not in os.environ}
    os.environ.update(untuned)
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # not glibc: its own allocator, its own policy
        return
    for name, parameter in (
        ("MALLOC_TRIM_THRESHOLD_", _M_TRIM_THRESHOLD),
        ("MALLOC_MMAP_THRESHOLD_", _M_MMAP_THRESHOLD),
    ):
        if name in untuned:
            mallopt(parameter, int(untuned[name]))


def uvicorn_options(settings: Settings) -> dict[str, Any]:
    """What uvicorn is told besides where to listen, the workers and the request limit."""
    return {
        "factory": True,
        "log_level": "info",
        "log_config": logs.config(settings.log_format),
        # As JSON, the service writes each request's line itself (``api.observe``).
        "access_log": settings.log_format != "json",
        "timeout_graceful_shutdown": 30,
        "http": "tracesets.api.connections:GuardedHttpToolsProtocol",
        # No route is a WebSocket: an upgrade is asked of an ordinary request, which is
        # answered as such, not refused 403 in plain text by a WebSocket handshake.
        "ws": "none",
        # Uvicorn's 5 s is httpx's own expiry and shorter than a proxy's (60 s for AWS's
        # load balancers): a client reusing a connection just as the service closed it
        # got a connection error. So the service keeps idle connections longer.
        "timeout_keep_alive": settings.keep_alive,
    }


def main() -> None:
    parser = argparse.ArgumentParser(prog="tracesets.api.serving")
    parser.add_argument("--host", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--workers", type=int, required=True)
    parser.add_argument("--limit-concurrency", type=int, required=True)
    args = parser.parse_args()
    tune_malloc()
    # Before anything imports prometheus_client: it reads the folder's name at import.
    shared = tempfile.mkdtemp(prefix="tracesets-metrics-")
    os.environ[MULTIPROC_DIR] = shared

    import uvicorn

    try:
        uvicorn.run(
            "tracesets.api.app:create_app",
            host=args.host,
            port=args.port,
            workers=args.workers,
            limit_concurrency=args.limit_concurrency,
            **uvicorn_options(Settings.from_env()),
        )
    finally:
        shutil.rmtree(shared, ignore_errors=True)


if __name__ == "__main__":
    main()
