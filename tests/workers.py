"""``tracesets worker`` processes beside a service that leaves inspection to them.

The service and its workers share one database and one store: by default SQLite and a
local folder (the same data folder), with the scaled pass's settings PostgreSQL and S3.
On PostgreSQL they get a database of their own, so that no other test's service (which
inspects in-process) claims their files.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from tests.flows import request_urls, send
from tests.server import BIN, FRESH_CONNECTIONS, ServerProcess, own_database


def workers_service(data_dir: Path, **extra: str) -> ServerProcess:
    """A service that does not inspect (``TRACESETS_INSPECT_IN_SERVICE=0``)."""
    env = {"TRACESETS_INSPECT_IN_SERVICE": "0", **extra}
    database = os.environ.get("TRACESETS_TEST_DATABASE_URL", "")
    if database.startswith("postgresql"):
        env["DATABASE_URL"] = own_database(database)
    return ServerProcess(data_dir, extra_env=env)


class Worker:
    """One ``tracesets worker`` with the service's settings and data folder; ``args``:
    more of its options."""

    def __init__(self, service: ServerProcess, name: str, *args: str, **extra: str) -> None:
        self.log = service.data_dir / f"worker-{name}.log"
        with self.log.open("ab") as log:
            self.proc = subprocess.Popen(
                [str(BIN), "worker", "--data-dir", str(service.data_dir), *args],
                env={**service.env, **extra},
                stdout=log,
                stderr=subprocess.STDOUT,
            )

    def lines(self, needle: str) -> list[str]:
        return [line for line in self.log.read_text().splitlines() if needle in line]

    @property
    def owner(self) -> str:
        """The name it claims files by, from its first log line."""
        [started] = wait_for(lambda: self.lines(" inspecting ("), what=f"{self.log} to start")
        owner: str = started.split("worker ", 1)[1].split(" inspecting", 1)[0]
        return owner

    def stop(self, sig: int = signal.SIGTERM) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        return self.proc.wait(timeout=120)


def wait_for(check: Callable[[], Any], *, what: str, timeout: float = 600) -> Any:
    """``check()``'s first true answer. The timeout only stops a stuck test hanging the
    run; on a loaded machine the wait itself may take long."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        answer = check()
        if answer:
            return answer
        time.sleep(0.1)
    raise AssertionError(f"waited {timeout} s for {what}")


def client(service: ServerProcess, token: str | None = None) -> httpx.Client:
    """A client of the service, with its first token or ``token`` (another workspace's)."""
    return httpx.Client(
        base_url=service.url,
        headers={"Authorization": f"Bearer {token or service.token}"},
        timeout=60,
        limits=FRESH_CONNECTIONS,
    )


def upload_ready(api: httpx.Client, files: dict[str, bytes], metadata: Any) -> str:
    """Upload and complete a traceset (its inspection is then queued); its id."""
    created = request_urls(api, files, metadata)
    for target in created["uploads"]:
        send(target, files[target["name"]])
    done = api.post(f"/api/v1/tracesets/{created['tracesetId']}/complete")
    assert done.status_code == 200, done.text
    traceset_id: str = created["tracesetId"]
    return traceset_id


def file_rows(service: ServerProcess, traceset_id: str) -> dict[str, tuple[str, int, str | None]]:
    """Each primary file's (status, attempts, owner) in the inspection's claim rows."""
    rows = service.query(
        "SELECT f.name, c.status, c.attempts, c.owner FROM inspection_files c "
        "JOIN files f ON f.traceset_seq = c.traceset_seq AND f.idx = c.idx "
        f"JOIN tracesets t ON t.seq = c.traceset_seq WHERE t.id = '{traceset_id}'"
    )
    return {
        str(r[0]): (str(r[1]), int(str(r[2])), None if r[3] is None else str(r[3])) for r in rows
    }


def inspection_state(service: ServerProcess, traceset_id: str) -> tuple[str, str | None]:
    """The inspection's status as stored (running included) and who ran its checks."""
    [(status, checked_by)] = service.query(
        "SELECT i.status, i.checked_by FROM inspections i JOIN tracesets t "
        f"ON t.seq = i.traceset_seq WHERE t.id = '{traceset_id}'"
    )
    return str(status), None if checked_by is None else str(checked_by)
