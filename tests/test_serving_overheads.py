"""What the serving process leaves out of each request: coloured access lines, telemetry
nobody configured. The access log still names every request, and telemetry still starts
for a process whose environment asks for it."""

from __future__ import annotations

import secrets

import httpx

from tests.server import ServerProcess
from tracesets.api.app import telemetry


def test_the_access_log_names_each_request_its_client_and_its_status(
    server: ServerProcess,
) -> None:
    probe = secrets.token_hex(8)
    answer = httpx.get(f"{server.url}/healthz?probe={probe}", timeout=60)
    assert answer.status_code == 200
    # uvicorn writes the line (and flushes it) before the answer's first byte is sent.
    lines = [line for line in server.log.read_text().splitlines() if probe in line]
    assert len(lines) == 1
    assert lines[0].startswith("INFO:     127.0.0.1:")
    assert lines[0].endswith(f'- "GET /healthz?probe={probe} HTTP/1.1" 200')
    assert "\x1b[" not in lines[0]  # no terminal colours in a file


def test_telemetry_is_off_unless_the_environment_configures_opentelemetry() -> None:
    off = {"tracing": False, "metrics": False, "logs": False}
    on = {"tracing": True, "metrics": True, "logs": True}
    assert telemetry({}) == off
    assert telemetry({"PATH": "/usr/bin", "TRACESETS_SECRET": "x"}) == off
    assert telemetry({"OTEL_SERVICE_NAME": "tracesets"}) == on
    assert telemetry({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}) == on
    assert telemetry({"FASTAPI_OTEL_AUTO_CONFIGURE": "true"}) == on
    assert telemetry({"FASTAPI_OTEL_AUTO_CONFIGURE": "false"}) == off
