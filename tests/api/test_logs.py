"""The service's log lines: a JSON line per request and per background event, a request id
in and out, and never a token, a signature or a signed URL's query, in either format."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.flows import RANKS_8, inspected, request_urls, send
from tests.server import FRESH_CONNECTIONS, ServerProcess

TRACE = json.dumps({"traceEvents": [], "distributedInfo": {"rank": 0}}).encode()


@pytest.fixture(scope="module")
def json_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    server = ServerProcess(
        tmp_path_factory.mktemp("json-logs"),
        extra_env={"TRACESETS_LOG_FORMAT": "json"},
        local_files=True,
    )
    server.start()
    yield server
    server.stop()


def _client(server: ServerProcess, token: str | None) -> httpx.Client:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.Client(base_url=server.url, headers=headers, timeout=60, limits=FRESH_CONNECTIONS)


def _traffic(server: ServerProcess) -> tuple[list[str], list[str]]:
    """Uploads, downloads and refusals with tokens and signed URLs; the tokens and the
    signed URLs used."""
    other = server.new_token("elsewhere")
    urls: list[str] = []
    with _client(server, server.token) as api:
        created = request_urls(api, {"rank0.json": TRACE}, RANKS_8)
        [target] = created["uploads"]
        urls.append(target["url"])
        send(target, TRACE)
        path = f"/api/v1/tracesets/{created['tracesetId']}"
        assert api.post(f"{path}/complete").status_code == 200
        inspected(api, created["tracesetId"])
        download = api.get(f"{path}/files/rank0.json")
        assert download.status_code == 307
        urls.append(download.headers["location"])
        assert httpx.get(download.headers["location"], timeout=60).content == TRACE
    with _client(server, other) as api:
        assert api.get(path).status_code == 404
    with _client(server, "tsk_" + "x" * 43) as api:
        assert api.get("/api/v1/whoami").status_code == 401
    return [server.token, other], urls


def _lines(log: Path) -> list[dict[str, Any]]:
    """The log's JSON lines (the command's banner, printed before the service starts, is text)."""
    found = []
    for line in log.read_text().splitlines():
        if line.startswith("{"):
            found.append(json.loads(line))
    return found


def test_no_line_holds_a_token_or_a_signed_urls_query(json_server: ServerProcess) -> None:
    secrets_used, urls = _traffic(json_server)
    json_server.stop()  # every line written
    json_server.start()
    text = json_server.log.read_text()
    signatures = [re.search(r"signature=([^&]+)", url)[1] for url in urls]  # type: ignore[index]
    for secret in [*secrets_used, *signatures]:
        assert secret not in text
    assert "signature=" not in text
    assert "x-amz-" not in text.lower()
    assert "?expires" not in text


def test_a_json_line_per_request_with_its_id_and_fields(json_server: ServerProcess) -> None:
    with _client(json_server, json_server.token) as api:
        given = api.get("/api/v1/whoami", headers={"X-Request-ID": "job-42.step_7"})
        made = api.get(
            f"/api/v1/tracesets/{'0' * 32}", headers={"X-Request-ID": "not/a plain id" + "x" * 200}
        )
        unmatched = api.get("/no/such/route/abc123")
    assert given.headers["x-request-id"] == "job-42.step_7"
    assert re.fullmatch(r"[0-9a-f]{16}", made.headers["x-request-id"])
    json_server.stop()
    json_server.start()
    access = {
        line["request_id"]: line
        for line in _lines(json_server.log)
        if line["logger"] == "tracesets.access"
    }
    line = access["job-42.step_7"]
    assert line["route"] == "/api/v1/whoami"
    assert (line["method"], line["status"], line["workspace"]) == ("GET", 200, "default")
    assert line["bytes_in"] == 0 and line["bytes_out"] == len(given.content)
    assert line["duration_ms"] >= 0
    refused = access[made.headers["x-request-id"]]
    assert refused["route"] == "/api/v1/tracesets/{traceset_id}"
    assert (refused["status"], refused["problem"]) == (404, "not-found")
    assert access[unmatched.headers["x-request-id"]]["route"] == "unmatched"
    assert "abc123" not in json.dumps(access[unmatched.headers["x-request-id"]])


def test_background_events_are_json_lines(json_server: ServerProcess) -> None:
    _traffic(json_server)
    json_server.stop()
    json_server.start()
    events = {line.get("event") for line in _lines(json_server.log)}
    assert {"inspection.claimed", "inspection.file_done", "inspection.done"} <= events
    assert not [line for line in json_server.log.read_text().splitlines() if "INFO:" in line]


def test_the_text_access_line_has_no_query(local_server: ServerProcess) -> None:
    with _client(local_server, local_server.token) as api:
        created = request_urls(api, {"rank0.json": TRACE}, RANKS_8)
        [target] = created["uploads"]
        send(target, TRACE)
    text = local_server.log.read_text()
    assert f"PUT {target['url'].split('?')[0].removeprefix(local_server.url)} HTTP/1.1" in text
    assert "signature=" not in text
