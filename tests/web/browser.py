"""Debian's chromium under Playwright: how it is started, and a tab that records what it saw.

Playwright never downloads a browser here: it drives the system's ``/usr/bin/chromium``
(``make browser`` installs it) with the flags this machine's closed network needs.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from playwright.sync_api import ConsoleMessage, Dialog, Page, Request, ViewportSize, expect

from tests.server import ServerProcess

CHROMIUM: Final = Path(os.environ.get("TRACESETS_TEST_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_FLAGS: Final = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ARTIFACTS: Final = Path(__file__).resolve().parents[2] / "test-artifacts" / "web"
#: How long a step waits for the page (an action, a navigation, an ``expect``) before it
#: fails: a bound for a page that never gets there, not a measure of speed, so generous
#: enough for a machine under any load (Playwright's own: 30 s, and 5 s for ``expect``).
WAIT_MS: Final = 60_000
WIDE: Final = ViewportSize(width=1280, height=900)
NARROW: Final = ViewportSize(width=390, height=844)

#: Chrome logs every non-2xx fetch as a console error; refusals are expected answers here.
_EXPECTED_CONSOLE = re.compile(r"^Failed to load resource: the server responded with a status")


@dataclass
class Tab:
    """One browser page on the service, with the dialogs, errors and requests it saw."""

    page: Page
    server: ServerProcess
    token: str
    dialogs: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    requests: list[Request] = field(default_factory=list)

    def watch(self) -> None:
        self.page.on("dialog", self._on_dialog)
        self.page.on("console", self._on_console)
        self.page.on("pageerror", lambda error: self.errors.append(f"page error: {error}"))
        self.page.on("request", self._on_request)

    def _on_request(self, request: Request) -> None:
        self.requests.append(request)

    def _on_dialog(self, dialog: Dialog) -> None:
        self.dialogs.append(dialog.message)
        dialog.dismiss()

    def _on_console(self, message: ConsoleMessage) -> None:
        if message.type == "error" and not _EXPECTED_CONSOLE.match(message.text):
            self.errors.append(message.text)

    def open(self, fragment: str = "#/") -> None:
        self.page.goto(f"{self.server.url}/{fragment}")

    def sign_in(self) -> None:
        """Sign in through the form, as a person would, and wait for the list."""
        self.open()
        self.page.get_by_label("Token").fill(self.token)
        self.page.get_by_role("button", name="Sign in").click()
        expect(self.page.get_by_role("heading", level=1)).to_have_text("Tracesets")

    def open_traceset(self, name: str) -> None:
        self.page.get_by_role("link", name=name, exact=True).click()
        expect(self.page.get_by_role("heading", level=1)).to_have_text(name)

    def settle(self) -> None:
        """Two animation frames: resize observers have drawn, layout is done."""
        self.page.evaluate(
            "() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)))"
        )

    def stray_text(self) -> list[str]:
        """Text nodes reading "null" or "undefined" outside JSON: a value shown unchecked."""
        found: list[str] = self.page.evaluate(
            """() => {
                const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
                const stray = [];
                for (let node = walker.nextNode(); node; node = walker.nextNode()) {
                    const text = node.textContent.trim();
                    const inJson = node.parentElement.closest('pre, code, textarea, .annotated');
                    if (!inJson && /^(null|undefined|NaN|\\[object Object\\])$/.test(text)) {
                        stray.push(node.parentElement.outerHTML.slice(0, 120));
                    }
                }
                return stray;
            }"""
        )
        return found

    def shoot(self, name: str) -> None:
        """A full-page screenshot at 1280 and at 390 pixels wide, into test-artifacts/web.

        Every page shot is also checked for stray "null"/"undefined" text.
        """
        assert self.stray_text() == [], self.stray_text()
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        for size in (WIDE, NARROW):
            self.page.set_viewport_size(size)
            self.settle()
            self.page.screenshot(path=ARTIFACTS / f"{name}-{size['width']}.png", full_page=True)
        self.page.set_viewport_size(WIDE)
        self.settle()

    def focused(self) -> str:
        """What has the keyboard focus: its id, else its tag and text."""
        described: str = self.page.evaluate(
            "() => { const e = document.activeElement;"
            " return e.id ? '#' + e.id : e.tagName.toLowerCase() + ':' + e.textContent.trim(); }"
        )
        return described

    def tab_to(self, wanted: str, *, limit: int = 40) -> None:
        """Press Tab until ``wanted`` (as ``focused`` describes it) has the focus."""
        seen = []
        for _ in range(limit):
            self.page.keyboard.press("Tab")
            seen.append(self.focused())
            if seen[-1] == wanted:
                return
        raise AssertionError(f"Tab never reached {wanted!r}; it went through {seen}")
