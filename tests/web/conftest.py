from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, expect, sync_playwright

from tests.server import ServerProcess
from tests.web.browser import CHROMIUM, CHROMIUM_FLAGS, WAIT_MS, WIDE, Tab

expect.set_options(timeout=WAIT_MS)


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    if not CHROMIUM.exists():
        message = f"no browser at {CHROMIUM}: `make browser` installs Debian's chromium"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_FLAGS, headless=True
        )
        yield launched
        launched.close()


@pytest.fixture
def tab(browser: Browser, server: ServerProcess, workspace_token: str) -> Iterator[Tab]:
    """A fresh browser context (empty session storage) on a fresh, empty workspace."""
    context = browser.new_context(viewport=WIDE)
    context.set_default_timeout(WAIT_MS)
    opened = Tab(context.new_page(), server, workspace_token)
    opened.watch()
    yield opened
    context.close()
    assert opened.dialogs == [], f"the page opened dialogs: {opened.dialogs}"
    assert opened.errors == [], f"the page logged errors: {opened.errors}"
