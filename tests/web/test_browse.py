"""Signing in, the list and its filters, a traceset's page: in Debian's chromium."""

from __future__ import annotations

import httpx
from playwright.sync_api import expect

from tests.web.browser import Tab
from tests.web.seed import DECLARED_8, tiny_trace, upload_text
from tracesets import vocabulary

XSS = "<img src=x onerror=alert(1)>"
STORED = (
    '{"workload_family": "llama", "workload_name": "7b-pretrain", "lr": 0.1000000000000000000001,'
    ' "dropout": 2.0, "tags": ["a", 1e2], "empty": {}, "note": "café ☕",'
    ' "shape": {"rankCount": 8, "global_batch_size": 512}, "parallelism": {"dp": 4, "tp": 2}}'
)
#: The stored text, re-indented: every literal exactly as sent (no 0.1, no 2, no 100).
STORED_PRETTY = """{
  "workload_family": "llama",
  "workload_name": "7b-pretrain",
  "lr": 0.1000000000000000000001,
  "dropout": 2.0,
  "tags": [
    "a",
    1e2
  ],
  "empty": {},
  "note": "café ☕",
  "shape": {
    "rankCount": 8,
    "global_batch_size": 512
  },
  "parallelism": {
    "dp": 4,
    "tp": 2
  }
}"""


def test_sign_in_keeps_the_token_in_session_storage_and_out_of_urls(tab: Tab) -> None:
    page = tab.page
    tab.open()
    expect(page.get_by_role("heading", level=1)).to_have_text("Sign in")
    tab.shoot("sign-in")
    page.get_by_label("Token").fill("tsk_not_a_token_of_this_service")
    page.get_by_role("button", name="Sign in").click()
    expect(page.locator("#token-error")).to_have_text(
        "The token is not known to this service or was revoked"
    )
    tab.sign_in()
    assert page.evaluate("() => sessionStorage.getItem('tracesets.token')") == tab.token
    api_calls = [r for r in tab.requests if "/api/v1/" in r.url]
    assert api_calls and all(tab.token not in r.url for r in tab.requests)
    assert api_calls[-1].headers["authorization"] == f"Bearer {tab.token}"

    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Sign in")
    assert page.evaluate("() => sessionStorage.getItem('tracesets.token')") is None


def test_list_filters_by_workload_family(tab: Tab, api: httpx.Client) -> None:
    for name, family in [("llama a", "llama"), ("gpt", "gpt"), ("llama b", "llama")]:
        upload_text(
            api, f'{{"workload_family": "{family}", "shape": {{"rankCount": 8}}}}', name=name
        )
    upload_text(api, DECLARED_8, name="still uploading", complete=False)
    tab.sign_in()
    rows = tab.page.locator("table.tracesets tbody tr")
    expect(rows).to_have_count(4)
    expect(rows.first).to_contain_text("pending")
    expect(rows.nth(1)).to_contain_text("ready")
    expect(rows.nth(1)).to_contain_text("8")
    tab.shoot("list")

    tab.page.get_by_label("Workload family").fill("llama")
    tab.page.get_by_role("button", name="Apply filters").click()
    expect(rows).to_have_count(2)
    expect(rows.locator(".cell-name")).to_have_text(["llama b", "llama a"])
    assert "workload_family=llama" in tab.page.url
    tab.shoot("list-filtered")

    tab.page.get_by_role("button", name="Clear").click()
    expect(rows).to_have_count(4)


def test_a_filter_the_service_refuses_shows_its_message_by_the_field(
    tab: Tab, api: httpx.Client
) -> None:
    expected = api.get("/api/v1/tracesets", params={"rank_count": "0"}).json()["errors"]
    tab.sign_in()
    tab.page.get_by_label("Rank count").fill("0")
    tab.page.get_by_role("button", name="Apply filters").click()
    expect(tab.page.locator("#filter-rank_count-error")).to_have_text(expected[0]["message"])
    expect(tab.page.get_by_label("Rank count")).to_have_attribute("aria-invalid", "true")


def test_list_pages_through_the_cursor(tab: Tab, api: httpx.Client) -> None:
    for i in range(23):
        upload_text(api, DECLARED_8, name=f"run {i:02d}", complete=False)
    tab.sign_in()
    rows = tab.page.locator("table.tracesets tbody tr")
    expect(rows).to_have_count(20)
    expect(rows.first).to_contain_text("run 22")
    tab.page.get_by_role("button", name="Older →").click()
    expect(rows).to_have_count(3)
    expect(rows.last).to_contain_text("run 00")
    expect(tab.page.get_by_role("button", name="Older →")).to_be_disabled()
    tab.page.get_by_role("button", name="← Newer").click()
    expect(rows).to_have_count(20)


def test_a_traceset_page_shows_its_files_and_metadata_exactly_as_stored(
    tab: Tab, api: httpx.Client
) -> None:
    upload_text(
        api,
        STORED,
        name="llama 7b, 8 ranks",
        description="Captured on the nightly cluster.",
        files={"traces.zip": b"x" * 3000, "logs/run.txt": b"ok"},
    )
    tab.sign_in()
    tab.open_traceset("llama 7b, 8 ranks")
    page = tab.page
    expect(page.locator("#metadata-json")).to_have_text(STORED_PRETTY)
    expect(page.locator("#fact-rank-count")).to_have_text("8")
    expect(page.get_by_text("Captured on the nightly cluster.")).to_be_visible()
    files = page.locator("table.files tbody tr")
    expect(files).to_have_count(2)
    expect(files.first).to_contain_text("traces.zip")
    expect(files.first).to_contain_text("primary")
    expect(files.first).to_contain_text("3.0 kB")
    expect(files.first).to_contain_text("3,000 bytes")
    expect(files.first).to_contain_text("yes")
    expect(files.nth(1)).to_contain_text("logs/run.txt")
    expect(files.nth(1)).to_contain_text("2 bytes")
    tab.shoot("traceset")


def test_names_from_metadata_are_shown_as_text_never_run(tab: Tab, api: httpx.Client) -> None:
    upload_text(
        api,
        f'{{"workload_family": "{XSS}", "workload_name": "{XSS}", "shape": {{"rankCount": 8}}}}',
        name=XSS,
        description=XSS,
    )
    tab.sign_in()
    expect(tab.page.get_by_role("link", name=XSS)).to_be_visible()
    expect(tab.page.locator(".workload-name")).to_have_text(XSS)
    tab.open_traceset(XSS)
    expect(tab.page.locator(".description")).to_have_text(XSS)
    expect(tab.page.locator("#metadata-json")).to_contain_text(f'"workload_name": "{XSS}"')
    assert tab.page.locator("main img").count() == 0
    assert tab.page.title() == f"{XSS} · Tracesets"
    tab.shoot("traceset-escaped")
    # The tab fixture checks that no dialog opened and nothing was logged as an error.


def test_the_policy_stops_injected_inline_script(tab: Tab) -> None:
    tab.open()
    expect(tab.page.get_by_role("heading", level=1)).to_have_text("Sign in")
    # The browser reports the refusal as an error (the policy was enforced, not absent),
    # as an event that may come after the script's answer: wait for it, so that it is
    # neither missed here nor seen after the errors are cleared.
    with tab.page.expect_console_message(lambda m: "Content Security Policy" in m.text):
        ran = tab.page.evaluate(
            """() => {
                const script = document.createElement('script');
                script.textContent = 'window.injected = true';
                document.head.append(script);
                return window.injected === true;
            }"""
        )
    assert ran is False
    assert any("Content Security Policy" in e for e in tab.errors)
    tab.errors.clear()


def test_every_step_works_from_the_keyboard(tab: Tab, api: httpx.Client) -> None:
    upload_text(api, DECLARED_8, name="keyboard run")
    tab.open()
    page = tab.page
    expect(page.get_by_role("heading", level=1)).to_have_text("Sign in")
    assert tab.focused() == "#token"  # the sign-in form takes the focus
    page.keyboard.type(tab.token)
    tab.tab_to("button:Sign in")
    page.keyboard.press("Enter")
    expect(page.get_by_role("heading", level=1)).to_have_text("Tracesets")

    tab.tab_to("#filter-workload_family")
    tab.tab_to("#filter-status")
    tab.tab_to("button:Apply filters")
    tab.tab_to("a:keyboard run")
    page.keyboard.press("Enter")
    expect(page.get_by_role("heading", level=1)).to_have_text("keyboard run")

    tab.tab_to("#promote")
    page.keyboard.press("Enter")
    expect(page.locator(".notice.success")).to_contain_text("Promoted.")
    expect(page.locator(".title-row .badge")).to_have_text("promoted")


def test_a_traceset_of_many_files_shows_a_page_of_them_and_the_rest_page_by_page(
    tab: Tab, api: httpx.Client
) -> None:
    files = {f"rank-{i:04d}.json": b"" for i in range(1_205)}
    upload_text(api, DECLARED_8, name="many ranks", files=files, complete=False)
    tab.sign_in()
    listed = tab.page.locator("table.tracesets tbody tr")
    expect(listed.first).to_contain_text("1,205 files")
    tab.open_traceset("many ranks")
    page = tab.page
    rows = page.locator("table.files tbody tr")
    expect(rows).to_have_count(100)
    expect(page.locator("#files-state")).to_have_text("Files 1–100 of 1,205.")
    expect(page.locator("#files-previous")).to_be_disabled()
    for _ in range(12):
        page.get_by_role("button", name="Next →").click()
    # The last page, from the service's second page of files.
    expect(rows).to_have_count(5)
    expect(rows.last).to_contain_text("rank-1204.json")
    expect(page.locator("#files-state")).to_have_text("Files 1,201–1,205 of 1,205.")
    expect(page.locator("#files-next")).to_be_disabled()
    assert tab.focused() == "#files-previous"  # the keyboard is not dropped at the end


def _inspected(api: httpx.Client, traceset_id: str) -> None:
    """Wait until the service has read the traceset's traces (its queue runs apart)."""
    while (api.get(f"/api/v1/tracesets/{traceset_id}").json()["inspection"] or {}).get(
        "status"
    ) in (None, "pending", "running"):
        api.get("/api/v1/whoami")  # one round trip between looks, not a sleep


def test_every_list_filter_of_the_service_is_on_the_page(tab: Tab, api: httpx.Client) -> None:
    traces = {f"rank{r}.json": tiny_trace(r, 2) for r in range(2)}
    agree = upload_text(api, '{"shape": {"rankCount": 2}}', name="agrees", files=traces)
    disagree = upload_text(api, '{"shape": {"rankCount": 8}}', name="disagrees", files=traces)
    for created in (agree, disagree):
        _inspected(api, created["tracesetId"])
    tab.sign_in()
    page = tab.page
    for f in vocabulary.FILTERS:
        expect(page.get_by_label(f.label, exact=True)).to_have_count(1)
    rows = page.locator("table.tracesets tbody tr .cell-name")
    for choice, wanted in (("No", "disagrees"), ("Yes", "agrees")):
        page.get_by_label("Inspected OK", exact=True).select_option(label=choice)
        page.get_by_role("button", name="Apply filters").click()
        expect(rows).to_have_text([wanted])
    assert "inspected_ok=true" in page.url
