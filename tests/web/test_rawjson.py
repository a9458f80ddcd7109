"""The page's JSON reader and pretty printer (rawjson.js), run in the browser itself."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page

from tests.server import ServerProcess
from tests.web.browser import WAIT_MS

FAITHFUL = [
    '{"lr": 0.1000000000000000000001, "two": 2.0, "big": 1e400, "neg": -0E-0}',
    '[1, [], {}, [[]], {"a": {"b": [true, false, null]}}]',
    '{"s": "tab\\t quote\\" slash\\/ \\u00e9 \\ud83d\\ude00 ☕", "": ""}',
    '  {"int": 123456789012345678901234567890}  ',
    '"just a string"',
    "-12.5e+3",
]
REFUSED = ['{"a": 1,}', "[01]", '"\x01"', '{"a" 1}', "1 2", "-", ".5", '"\\q"', "[1,", "nul", ""]


@pytest.fixture(scope="module")
def page(browser: Browser, server: ServerProcess) -> Iterator[Page]:
    context = browser.new_context()
    context.set_default_timeout(WAIT_MS)
    opened = context.new_page()
    opened.goto(f"{server.url}/static/favicon.svg")  # same origin, no app running
    yield opened
    context.close()


def pretty(page: Page, text: str) -> str:
    result: str = page.evaluate(
        "async (text) => (await import('/static/rawjson.js')).pretty("
        "(await import('/static/rawjson.js')).parse(text))",
        text,
    )
    return result


def exact(text: str) -> object:
    """The value with every number as its own text: what "exactly as stored" compares."""
    return json.loads(text, parse_float=str, parse_int=str, parse_constant=str)


@pytest.mark.parametrize("text", FAITHFUL)
def test_pretty_keeps_every_literal(page: Page, text: str) -> None:
    shown = pretty(page, text)
    assert exact(shown) == exact(text)
    if text.strip().startswith("{"):
        assert shown.splitlines()[1].startswith('  "')  # indented by two


@pytest.mark.parametrize("text", REFUSED)
def test_text_that_is_not_json_is_refused_with_its_place(page: Page, text: str) -> None:
    message: str = page.evaluate(
        """async (text) => {
            const { parse } = await import('/static/rawjson.js');
            try { parse(text); return 'accepted'; } catch (e) { return e.message; }
        }""",
        text,
    )
    assert message.startswith("line 1, column "), message
