"""A real Tracesets service process on loopback, for tests that speak HTTP to it.

The tests run against whatever backends the environment names: by default SQLite
and a local folder; with ``TRACESETS_TEST_DATABASE_URL`` / ``TRACESETS_TEST_STORAGE_URL``
set (CI's second pass), PostgreSQL and S3. One suite, every backend.
"""

from __future__ import annotations

import os
import resource
import secrets
import signal
import socket
import subprocess
import sys
import time
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Final

import httpx

BIN = Path(sys.executable).with_name("tracesets")


#: The tests' HTTP clients open a connection for each request. A kept-alive connection
#: may race the service's idle timeout (``TRACESETS_KEEP_ALIVE``, 65 s; a test may set it
#: lower): a request sent just as the service closes it gets no answer, and
#: a test cannot know whether it was carried out. A fresh connection has no such race.
FRESH_CONNECTIONS = httpx.Limits(max_keepalive_connections=0)


def reserve_port() -> socket.socket:
    """A loopback port held, bound but not listening, for as long as the socket is open.

    A port found free and then let go can be taken by anyone before the service binds
    it: another service or test on the machine, or any client's outgoing connection.
    While this socket holds it, the kernel hands the port to nobody else (binding port 0
    and outgoing connections skip it; binding it by number fails), yet connections to it
    are refused, as to any port where nothing listens. The service binds the very port
    itself: with SO_REUSEADDR on both sockets (uvicorn sets it on its own), the kernel
    lets one listener join a bound socket that does not listen. So the port stays ours
    across a stop and a restart, and whatever listens there is our service.
    """
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    return sock


@contextmanager
def nowhere() -> Iterator[str]:
    """A loopback URL where nothing listens, and nothing can start to while it is used."""
    with reserve_port() as sock:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"


def prometheus_series(text: str) -> dict[str, float]:
    """Each series of a Prometheus text exposition (name and labels) and its value."""
    series: dict[str, float] = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            series[name] = float(value)
    return series


def uses_s3() -> bool:
    return bool(os.environ.get("TRACESETS_TEST_STORAGE_URL"))


def multipart_threshold() -> int | None:
    """What whoami says of the run's store: the S3 setting this run gives the service (its
    default 64 MiB); none for local files, which the service receives in one PUT each."""
    if not uses_s3():
        return None
    return int(os.environ.get("TRACESETS_MULTIPART_THRESHOLD", str(64 * 1024 * 1024)))


def backend_env() -> dict[str, str]:
    """Settings that point a service at the backends this test run uses."""
    env: dict[str, str] = {}
    database = os.environ.get("TRACESETS_TEST_DATABASE_URL")
    storage = os.environ.get("TRACESETS_TEST_STORAGE_URL")
    if database:
        env["DATABASE_URL"] = database
    if storage:
        env["TRACESETS_STORAGE_URL"] = storage
    return env


def own_database(url: str) -> str:
    """A new, empty PostgreSQL database beside the one ``url`` names (the run's), named
    after it so that the run's end drops it too (scripts/with-scaled-services)."""
    import psycopg

    base, _, name = url.rpartition("/")
    fresh = f"{name}_{secrets.token_hex(4)}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{fresh}"')
    return f"{base}/{fresh}"


#: The tests exercise the routes, not the per-token rate limit: at the default rate (100
#: requests a second after a burst of 200) a test's 233 quick uploads were refused or not
#: by how fast the machine ran them. The rate limit's own tests set theirs
#: (tests/api/test_scopes_and_limits.py, the status table's 429).
UNLIMITED_RATE: Final = {"TRACESETS_RATE_LIMIT": "1000000", "TRACESETS_RATE_BURST": "1000000"}


class ServerProcess:
    """``tracesets serve`` in a subprocess; ``stop``/``start`` keep the same data."""

    def __init__(
        self,
        data_dir: Path,
        *,
        extra_env: dict[str, str] | None = None,
        local_files: bool = False,
        files_limit: int | None = None,
        workers: int = 1,
    ) -> None:
        """``files_limit``: the service's open-file limit (soft and hard), if not inherited."""
        self.data_dir = data_dir
        self.files_limit = files_limit
        self.workers = workers
        reserved = reserve_port()
        weakref.finalize(self, reserved.close)  # held for this object's whole life
        self.port: int = reserved.getsockname()[1]
        self.token = "tsk_test_" + secrets.token_hex(16)
        self.env = {
            **os.environ,
            **backend_env(),
            **UNLIMITED_RATE,
            "TRACESETS_BOOTSTRAP_TOKEN": self.token,
            "TRACESETS_SECRET": os.environ.get("TRACESETS_TEST_SECRET", secrets.token_hex(32)),
            **(extra_env or {}),
        }
        if local_files:  # the service's own signed URLs: whatever the run's database
            self.env.pop("TRACESETS_STORAGE_URL", None)
            if self.env.get("DATABASE_URL", "").startswith("postgresql"):
                # Its files are in its own folder: a database shared with other services
                # would let their inspection queues claim tracesets they cannot read.
                self.env["DATABASE_URL"] = own_database(self.env["DATABASE_URL"])
        self.proc: subprocess.Popen[bytes] | None = None
        self.log = data_dir / "server.log"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        with self.log.open("ab") as log:
            self.proc = subprocess.Popen(
                [
                    str(BIN),
                    "serve",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(self.port),
                    "--data-dir",
                    str(self.data_dir),
                    "--workers",
                    str(self.workers),
                ],
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                # Only setrlimit runs between fork and exec: no lock a thread could hold.
                preexec_fn=self._limit_files if self.files_limit is not None else None,  # noqa: PLW1509
            )
        # Refused until the service listens; once it does, it is ours (the port is
        # reserved), so its answer is worth waiting for however loaded the machine is.
        # The deadline only stops a hung service from hanging the run.
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the service exited early:\n{self.log.read_text()}")
            try:
                if httpx.get(f"{self.url}/healthz", timeout=60).status_code == 200:
                    return
            except httpx.HTTPError:
                time.sleep(0.1)
        raise RuntimeError(f"the service did not start:\n{self.log.read_text()}")

    def _limit_files(self) -> None:
        assert self.files_limit is not None
        resource.setrlimit(resource.RLIMIT_NOFILE, (self.files_limit, self.files_limit))

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc is None:
            return
        self.proc.send_signal(sig)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc = None

    def query(self, sql: str) -> list[tuple[object, ...]]:
        """Read the service's database directly (SQLite or PostgreSQL, as configured)."""
        from sqlalchemy import create_engine, text

        from tracesets.db.engine import normalize_url

        url = self.env.get("DATABASE_URL") or f"sqlite:///{self.data_dir / 'tracesets.db'}"
        engine = create_engine(normalize_url(url))
        try:
            with engine.connect() as conn:
                return [tuple(row) for row in conn.execute(text(sql))]
        finally:
            engine.dispose()

    def execute(self, sql: str) -> None:
        """Change the service's database directly, committed (a test's doing behind its back)."""
        from sqlalchemy import create_engine, text

        from tracesets.db.engine import normalize_url

        url = self.env.get("DATABASE_URL") or f"sqlite:///{self.data_dir / 'tracesets.db'}"
        engine = create_engine(normalize_url(url))
        try:
            with engine.begin() as conn:
                conn.execute(text(sql))
        finally:
            engine.dispose()

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        """Run the ``tracesets`` command with this service's settings and data folder."""
        return subprocess.run(
            [str(BIN), *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    def new_token(self, workspace: str) -> str:
        done = self.cli(
            "token", "create", "--workspace", workspace, "--data-dir", str(self.data_dir)
        )
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()
