"""The probes: /livez answers whenever the process does, /readyz only when the database
and the file store answer, at this version's migration; /healthz as documented."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.server import ServerProcess
from tracesets.db.engine import head_revision


def behind(revision: str) -> str:
    """The migration before ``revision``."""
    return f"{int(revision) - 1:04d}"


@pytest.mark.parametrize("path", ["/livez", "/healthz"])
def test_liveness_needs_no_token(server: ServerProcess, path: str) -> None:
    answer = httpx.get(server.url + path, timeout=60)
    assert answer.status_code == 200, answer.text
    assert answer.json() == {"status": "ok"}


def test_a_ready_service_says_so_without_a_token(server: ServerProcess) -> None:
    answer = httpx.get(f"{server.url}/readyz", timeout=60)
    assert answer.status_code == 200, answer.text
    assert answer.json() == {"status": "ready"}


@pytest.fixture
def own_server(tmp_path: Path) -> Iterator[ServerProcess]:
    """A service of this test's own, with local files: its database and folder are its own."""
    process = ServerProcess(tmp_path, local_files=True)
    process.start()
    yield process
    process.stop()


def test_a_database_behind_the_migrations_is_not_ready(own_server: ServerProcess) -> None:
    head = head_revision()
    own_server.execute(f"UPDATE alembic_version SET version_num = '{behind(head)}'")
    answer = httpx.get(f"{own_server.url}/readyz", timeout=60)
    assert answer.status_code == 503, answer.text
    assert answer.headers["content-type"] == "application/problem+json"
    assert answer.headers["retry-after"].isdigit()
    assert answer.json()["detail"] == (
        f"The database is at migration {behind(head)}, behind this version's {head}: "
        "restart the service, which migrates at start"
    )
    assert answer.json()["errors"][0]["member"] == "migrations"
    # Alive all the same: a restart is what brings it back, not a kill.
    assert httpx.get(f"{own_server.url}/livez", timeout=60).status_code == 200
    own_server.execute(f"UPDATE alembic_version SET version_num = '{head}'")
    assert httpx.get(f"{own_server.url}/readyz", timeout=60).status_code == 200


def test_a_database_migrated_ahead_is_not_ready(own_server: ServerProcess) -> None:
    own_server.execute("UPDATE alembic_version SET version_num = '9999'")
    answer = httpx.get(f"{own_server.url}/readyz", timeout=60)
    assert answer.status_code == 503, answer.text
    assert "at migration 9999, ahead of this version's" in answer.json()["detail"]


def test_a_store_folder_gone_is_not_ready(own_server: ServerProcess) -> None:
    blobs = own_server.data_dir / "blobs"
    blobs.rename(own_server.data_dir / "blobs-away")
    answer = httpx.get(f"{own_server.url}/readyz", timeout=60)
    assert answer.status_code == 503, answer.text
    assert answer.json()["errors"] == [
        {
            "member": "store",
            "value": None,
            "message": "The file store did not answer (RuntimeError)",
        }
    ]
    assert str(own_server.data_dir) not in answer.text  # the folder is for the log only
    (own_server.data_dir / "blobs-away").rename(blobs)
    assert httpx.get(f"{own_server.url}/readyz", timeout=60).status_code == 200
