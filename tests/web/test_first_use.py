"""The issue's finish line: start the service as the README says, open the address it
prints, sign in with the token it prints, find the upload, promote it. Nothing else read."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, expect

from tests.server import FRESH_CONNECTIONS, ServerProcess
from tests.web.browser import WAIT_MS
from tests.web.seed import upload_text


@pytest.fixture
def first_run(tmp_path: Path) -> Iterator[ServerProcess]:
    """``tracesets serve`` on a new data folder, with no token set up beforehand."""
    process = ServerProcess(tmp_path / "tracesets-data")
    del process.env["TRACESETS_BOOTSTRAP_TOKEN"]
    process.start()
    yield process
    process.stop()


def test_a_new_user_signs_in_finds_the_upload_and_promotes_it(
    browser: Browser, first_run: ServerProcess
) -> None:
    banner = first_run.log.read_text()
    address = re.search(r"^Tracesets on (http://\S+)", banner, re.MULTILINE)
    token = re.search(r"^Token \(shown once, keep it\): (tsk_\S+)$", banner, re.MULTILINE)
    assert address and token, banner
    with httpx.Client(
        base_url=first_run.url,
        headers={"Authorization": f"Bearer {token[1]}"},
        timeout=60,
        limits=FRESH_CONNECTIONS,
    ) as api:
        upload_text(
            api,
            '{"parallelism": {"dp": 32, "tp": 8, "pp": 1}, "shape": {"rankCount": 256}}',
            name="GPT training, 256 ranks",
        )

    context = browser.new_context()
    context.set_default_timeout(WAIT_MS)
    try:
        page = context.new_page()
        page.goto(address[1])
        page.get_by_label("Token").fill(token[1])
        page.get_by_role("button", name="Sign in").click()
        page.get_by_role("link", name="GPT training, 256 ranks").click()
        expect(page.locator("#fact-rank-count")).to_have_text("256")
        page.get_by_role("button", name="Promote", exact=True).click()
        expect(page.locator(".notice.success")).to_contain_text("Promoted.")
        expect(page.locator(".title-row .badge")).to_have_text("promoted")
    finally:
        context.close()
