from __future__ import annotations

import os
import secrets
import tempfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from hypothesis import HealthCheck, settings

from tests.server import FRESH_CONNECTIONS, ServerProcess, nowhere

# Property tests judge answers, never speed: hypothesis's default 200 ms deadline per
# example and its too-slow health check fail by the machine's load, not the code's
# behaviour. And every run tries the same examples (derandomized), so a run passes or
# fails by the code alone; `pytest --hypothesis-profile=explore` draws new ones.
# Tests that set their own settings start from the profile loaded.
for _name, _fixed in (("tracesets", True), ("explore", False)):
    settings.register_profile(
        _name, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=_fixed
    )
settings.load_profile("tracesets")

#: Real PyTorch profiler traces, copied from shared/data/traces with their licence.
TRACES = Path(__file__).resolve().parent / "data" / "traces"


def pytest_configure(config: pytest.Config) -> None:
    """The client's upload state file goes to a scratch folder, never the user's home."""
    os.environ["XDG_STATE_HOME"] = tempfile.mkdtemp(prefix="tracesets-state-")


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """One service for the session; tests isolate themselves with their own workspace."""
    process = ServerProcess(tmp_path_factory.mktemp("service"))
    process.start()
    yield process
    process.stop()


@pytest.fixture
def unreachable() -> Iterator[str]:
    """A loopback URL where nothing listens (connections are refused) for the whole test."""
    with nowhere() as url:
        yield url


@pytest.fixture(scope="session")
def local_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """A service that keeps files in its data folder, for tests of its own signed URLs."""
    process = ServerProcess(tmp_path_factory.mktemp("local-service"), local_files=True)
    process.start()
    yield process
    process.stop()


@pytest.fixture
def local_api(local_server: ServerProcess) -> Iterator[httpx.Client]:
    token = local_server.new_token("ws-" + secrets.token_hex(6))
    with httpx.Client(
        base_url=local_server.url,
        headers={"Authorization": f"Bearer {token}"},
        timeout=60,
        limits=FRESH_CONNECTIONS,
    ) as client:
        yield client


@pytest.fixture
def workspace_token(server: ServerProcess) -> str:
    return server.new_token("ws-" + secrets.token_hex(6))


@pytest.fixture
def api(server: ServerProcess, workspace_token: str) -> Iterator[httpx.Client]:
    """An HTTP client of a fresh, empty workspace."""
    with httpx.Client(
        base_url=server.url,
        headers={"Authorization": f"Bearer {workspace_token}"},
        timeout=60,
        limits=FRESH_CONNECTIONS,
    ) as client:
        yield client
