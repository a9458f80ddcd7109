"""Start, watch and stop the processes a bench measures; all on loopback.

Every server writes its output to a log file (a pipe nobody reads would stall it once
full), and is stopped by its own process id when the bench ends, whatever happens.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Final

LOOPBACK: Final = "127.0.0.1"
VENV_BIN: Final = Path(sys.executable).parent


def compiled(source: Path) -> Path:
    """``source`` (a ``src`` folder) with its bytecode written, as installing a wheel
    writes it: a program started from sources Python may not cache
    (``PYTHONDONTWRITEBYTECODE``) compiles every module it imports at each start, which
    would be counted as the program's start-up. ``make setup`` does the same for this
    checkout's ``src``."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(source)], check=True)
    return source


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((LOOPBACK, 0))
        port: int = sock.getsockname()[1]
        return port


def wait_until_serving(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    """Poll ``url`` until it answers at all; fail early if the process died."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            tail = log.read_text(errors="replace")[-2000:]
            raise RuntimeError(f"{process.args!r} exited with {process.returncode}:\n{tail}")
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except urllib.error.HTTPError:
            return  # an answer, even 404, means it is up
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"{url} did not answer within 60 s; see {log}")


#: Benchmarks measure what the service can do, not its per-token rate limit.
NO_RATE_LIMIT: Final = {"TRACESETS_RATE_LIMIT": "1000000000", "TRACESETS_RATE_BURST": "1000000000"}


@contextmanager
def running(
    argv: Sequence[str],
    *,
    ready_url: str,
    log: Path,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> Iterator[subprocess.Popen[bytes]]:
    """Run ``argv`` until the block ends; yield once ``ready_url`` answers."""
    with log.open("wb") as out:
        process = subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, **NO_RATE_LIMIT, **(env or {})},
            cwd=cwd,
        )
        try:
            wait_until_serving(ready_url, process, log)
            yield process
        finally:
            stop(process)


def stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


#: This checkout's source: on ``PYTHONPATH``, the same code as the installed program.
SOURCE: Final = Path(__file__).resolve().parent.parent / "src"


def program(source: str | Path | None = None) -> list[str]:
    """How to run ``tracesets`` from ``source`` (a ``src`` folder; None: this checkout):
    the installed program, as people run it; for an earlier commit's source, its
    ``main`` (the installed program's entry point may be a function it lacks)."""
    if source is None or Path(source).resolve() == SOURCE:
        return [str(VENV_BIN / "tracesets")]
    start = "import sys; from tracesets.cli.main import main; sys.argv[0] = 'tracesets'; main()"
    return [sys.executable, "-c", start]


def service_argv(port: int, data_dir: Path, source: str | Path | None = None) -> list[str]:
    """The service exactly as people run it: ``tracesets serve``, one uvicorn worker
    (from ``source``, an earlier commit's ``src``, when given: ``program``)."""
    return [
        *program(source),
        "serve",
        "--host",
        LOOPBACK,
        "--port",
        str(port),
        "--data-dir",
        str(data_dir),
        "--workers",
        "1",
    ]


def peak_rss_bytes(pid: int) -> int:
    """The process's peak resident set size so far (VmHWM)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmHWM in /proc/{pid}/status")


def debian_command(command: str, package: str) -> str | None:
    """The path of ``command``, installing Debian's ``package`` first if it is missing.

    None when it cannot be had (no apt-get, not root, no network): the caller falls back.
    """
    found = shutil.which(command) or shutil.which(command, path="/usr/sbin:/usr/bin")
    if found is not None:
        return found
    if shutil.which("apt-get") is None or os.geteuid() != 0:
        return None
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = ["apt-get", "install", "-y", "-q", "--no-install-recommends", package]
    print(f"  installing {package} with apt-get …", flush=True)
    # A stale package list is the usual reason an install fails; refresh it once.
    for argv in (install, ["apt-get", "update", "-q"], install):
        done = subprocess.run(
            argv, env=env, capture_output=True, text=True, check=False, timeout=300
        )
        found = shutil.which(command) or shutil.which(command, path="/usr/sbin:/usr/bin")
        if found is not None:
            return found
        if done.returncode != 0:
            print(f"  {' '.join(argv[:2])} failed: {done.stderr.strip()[-300:]}", flush=True)
    return None
