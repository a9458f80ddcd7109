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
from pathlib import Path

import httpx

BIN = Path(sys.executable).with_name("tracesets")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def uses_s3() -> bool:
    return bool(os.environ.get("TRACESETS_TEST_STORAGE_URL"))


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
        self.port = free_port()
        self.token = "tsk_test_" + secrets.token_hex(16)
        self.env = {
            **os.environ,
            **backend_env(),
            "TRACESETS_BOOTSTRAP_TOKEN": self.token,
            "TRACESETS_SECRET": os.environ.get("TRACESETS_TEST_SECRET", secrets.token_hex(32)),
            **(extra_env or {}),
        }
        if local_files:  # the service's own signed URLs: whatever the run's database
            self.env.pop("TRACESETS_STORAGE_URL", None)
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
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the service exited early:\n{self.log.read_text()}")
            try:
                if httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200:
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
