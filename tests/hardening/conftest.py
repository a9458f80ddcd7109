"""Fixtures of the hardening tests: a service of their own, and tracesets in every state."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.hardening import tally
from tests.hardening.pool import Pool, make_pool
from tests.hardening.service import TOKEN, hardening_process
from tests.server import FRESH_CONNECTIONS, ServerProcess


@pytest.fixture(scope="session")
def hardening_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    process = hardening_process(tmp_path_factory.mktemp("hardening"))
    process.start()
    yield process
    process.stop()


@pytest.fixture(scope="session")
def hardening_api(hardening_server: ServerProcess) -> Iterator[httpx.Client]:
    with httpx.Client(
        base_url=hardening_server.url,
        headers={"Authorization": f"Bearer {TOKEN}"},
        timeout=60,
        limits=FRESH_CONNECTIONS,
    ) as client:
        yield client


@pytest.fixture(scope="module")
def pool(hardening_api: httpx.Client) -> Pool:
    return make_pool(hardening_api)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    lines = tally.summary()
    if lines:
        terminalreporter.section("hardening")
        for line in lines:
            terminalreporter.write_line(line)
