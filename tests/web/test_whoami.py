"""The page asks /api/v1/whoami who a token is, and offers Promote only to a token that may."""

from __future__ import annotations

import httpx
from playwright.sync_api import expect

from tests.server import ServerProcess
from tests.web.browser import Tab
from tests.web.seed import DECLARED_8, upload_text


def token_of(server: ServerProcess, api: httpx.Client, *scopes: str) -> str:
    """A token of ``api``'s workspace with only ``scopes``."""
    workspace = api.get("/api/v1/whoami").json()["workspace"]
    args = ["token", "create", "--workspace", workspace, "--data-dir", str(server.data_dir)]
    for scope in scopes:
        args += ["--scope", scope]
    made = server.cli(*args)
    assert made.returncode == 0, made.stderr
    return made.stdout.strip()


def api_paths(tab: Tab) -> list[str]:
    return [r.url.split(tab.server.url, 1)[1] for r in tab.requests if "/api/v1/" in r.url]


def test_sign_in_asks_whoami_and_lists_nothing_to_check_the_token(tab: Tab) -> None:
    tab.open()
    tab.page.get_by_label("Token").fill(tab.token)
    with tab.page.expect_response(lambda r: r.url.endswith("/api/v1/whoami")) as checked:
        tab.page.get_by_role("button", name="Sign in").click()
    assert checked.value.status == 200
    expect(tab.page.get_by_role("heading", level=1)).to_have_text("Tracesets")
    paths = api_paths(tab)
    assert paths[0] == "/api/v1/whoami", paths
    assert not any("limit=1" in path for path in paths), paths
    assert paths.count("/api/v1/whoami") == 1, paths


def test_a_token_without_read_is_refused_at_sign_in(
    tab: Tab, server: ServerProcess, api: httpx.Client
) -> None:
    tab.token = token_of(server, api, "write")
    tab.open()
    tab.page.get_by_label("Token").fill(tab.token)
    tab.page.get_by_role("button", name="Sign in").click()
    expect(tab.page.locator("#token-error")).to_have_text(
        "This token does not have the read scope, which this page needs to show tracesets."
    )
    expect(tab.page.get_by_role("heading", level=1)).to_have_text("Sign in")
    assert not any(path.startswith("/api/v1/tracesets") for path in api_paths(tab))


def test_a_token_without_promote_sees_promote_disabled_and_no_shortcut(
    tab: Tab, server: ServerProcess, api: httpx.Client
) -> None:
    upload_text(api, DECLARED_8, name="read only view")
    tab.token = token_of(server, api, "read")
    tab.sign_in()
    tab.open_traceset("read only view")
    page = tab.page
    promote = page.locator("#promote")
    expect(promote).to_be_disabled()
    expect(promote).to_have_accessible_description(
        "This token does not have the promote scope: sign in with a token that has it to promote."
    )
    expect(page.get_by_role("button", name="Edit metadata")).to_be_hidden()
    expect(page.get_by_role("button", name="Promote…")).to_have_count(0)
    assert not any(path.endswith("/promote") for path in api_paths(tab))


def test_a_token_with_promote_is_offered_promote(tab: Tab, api: httpx.Client) -> None:
    upload_text(api, DECLARED_8, name="promotable view")
    tab.sign_in()
    tab.open_traceset("promotable view")
    expect(tab.page.locator("#promote")).to_be_enabled()
    expect(tab.page.get_by_role("button", name="Promote…")).to_be_visible()
    expect(tab.page.get_by_role("button", name="Edit metadata")).to_be_visible()
