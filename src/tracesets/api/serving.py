"""The serving process: uvicorn and the app, without what the command line imported.

``tracesets serve`` migrates the database, makes the first token and prints its banner,
then replaces itself with this module (``os.execv``: the same process id, signals and
terminal). So the process that serves does not hold the command line's imports (typer,
rich, the client and the analysis, some 35 MiB of RSS) for its whole life.

    python -m tracesets.api.serving --host H --port P --workers N --limit-concurrency C
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from tracesets.settings import Settings


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


def uvicorn_options(settings: Settings) -> dict[str, Any]:
    """What uvicorn is told besides where to listen, the workers and the request limit."""
    return {
        "factory": True,
        "log_level": "info",
        "timeout_graceful_shutdown": 30,
        "http": "tracesets.api.connections:GuardedHttpToolsProtocol",
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

    import uvicorn

    uvicorn.run(
        "tracesets.api.app:create_app",
        host=args.host,
        port=args.port,
        workers=args.workers,
        limit_concurrency=args.limit_concurrency,
        **uvicorn_options(Settings.from_env()),
    )


if __name__ == "__main__":
    main()
