"""What the serving process leaves out of each request: coloured access lines, telemetry
nobody configured. The access log still names every request, and telemetry still starts
for a process whose environment asks for it."""

from __future__ import annotations

import secrets

import httpx

from tests.server import ServerProcess
from tracesets.api.app import telemetry


def test_the_access_log_names_each_request_its_client_and_its_status_never_its_query(
    server: ServerProcess,
) -> None:
    line = '- "GET /healthz HTTP/1.1" 200'

    def logged() -> list[str]:
        return [entry for entry in server.log.read_text().splitlines() if entry.endswith(line)]

    before = len(logged())
    probe = secrets.token_hex(8)
    answer = httpx.get(f"{server.url}/healthz?probe={probe}", timeout=60)
    assert answer.status_code == 200
    # uvicorn writes the line (and flushes it) before the answer's first byte is sent.
    lines = logged()
    assert len(lines) == before + 1
    assert lines[-1].startswith("INFO:     127.0.0.1:")
    assert "\x1b[" not in lines[-1]  # no terminal colours in a file
    assert probe not in server.log.read_text()  # a query may be a signed URL's signature


def test_telemetry_is_off_unless_the_environment_configures_opentelemetry() -> None:
    off = {"tracing": False, "metrics": False, "logs": False}
    on = {"tracing": True, "metrics": True, "logs": True}
    assert telemetry({}) == off
    assert telemetry({"PATH": "/usr/bin", "TRACESETS_SECRET": "x"}) == off
    assert telemetry({"OTEL_SERVICE_NAME": "tracesets"}) == on
    assert telemetry({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}) == on
    assert telemetry({"FASTAPI_OTEL_AUTO_CONFIGURE": "true"}) == on
    assert telemetry({"FASTAPI_OTEL_AUTO_CONFIGURE": "false"}) == off
