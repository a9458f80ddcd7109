from __future__ import annotations

import pytest

from tests.cli.test_cli import Run, run_tracesets
from tests.server import ServerProcess


@pytest.fixture
def tracesets(server: ServerProcess, workspace_token: str) -> Run:
    """The command, pointed at the session's service with a fresh workspace's token."""
    env = {"TRACESETS_URL": server.url, "TRACESETS_TOKEN": workspace_token}
    return lambda *args, **kw: run_tracesets(*args, env={**env, **kw.pop("env", {})}, **kw)
