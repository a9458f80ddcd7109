"""Requests counted into the metrics a loop turn's at once: every one written, by the end
of the turn it was answered in, as one ``observe`` per request would have written it."""

from __future__ import annotations

import asyncio
from typing import Any

from prometheus_client import REGISTRY, Histogram

from tracesets import metrics
from tracesets.api import counting

ROUTE = "/api/v1/tracesets/upload-url"


def _value(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def _buckets() -> list[float]:
    """The duration's bucket counts of upload-url, by bound."""
    return [
        _value("tracesets_http_request_duration_seconds_bucket", route=ROUTE, method="POST", le=le)
        for le in LE
    ]


BOUNDS = metrics.DURATION._upper_bounds
#: How the exposition names each bound (``le``).
LE = [
    sample.labels["le"]
    for sample in next(
        iter(Histogram("le", "", buckets=BOUNDS[:-1], registry=None).collect())
    ).samples
    if "le" in sample.labels
]


def test_a_turns_requests_are_written_at_its_end_each_in_its_bucket() -> None:
    durations = [BOUNDS[0], BOUNDS[0] * 1.5, BOUNDS[3], 10_000.0]  # on a bound, between, past
    requests = {"name": "tracesets_http_requests_total", "route": ROUTE, "method": "POST"}
    before: dict[str, Any] = {
        "count": _value(**requests, status="201"),
        "started": _value("tracesets_uploads_started_total", via="upload-url"),
        "refused": _value("tracesets_uploads_refused_total", reason="conflict"),
        "limited": _value("tracesets_rate_limited_total"),
        "received": _value("tracesets_http_received_bytes_total", route=ROUTE),
        "buckets": _buckets(),
    }
    written: list[float] = []

    async def turn() -> None:
        for seconds in durations:
            counting.record(ROUTE, "POST", 201, seconds, 100, 50, {})
        counting.record(ROUTE, "POST", 409, 0.0, 7, 0, {"problem": "conflict"})
        counting.record(ROUTE, "POST", 429, 0.0, 0, 0, {"problem": "rate-limited"})
        written.append(_value(**requests, status="201"))  # still in the turn
        await asyncio.sleep(0)  # the turn ends

    asyncio.run(turn())
    assert written == [before["count"]]
    assert _value(**requests, status="201") == before["count"] + 4
    assert _value("tracesets_uploads_started_total", via="upload-url") == before["started"] + 4
    assert _value("tracesets_uploads_refused_total", reason="conflict") == before["refused"] + 1
    assert _value("tracesets_rate_limited_total") == before["limited"] + 1
    assert _value("tracesets_http_received_bytes_total", route=ROUTE) == before["received"] + 407
    expected = Histogram("expected", "", buckets=BOUNDS[:-1], registry=None)
    for seconds in [*durations, 0.0, 0.0]:  # the 409 and the 429: the same duration series
        expected.observe(seconds)
    samples = [s for s in next(iter(expected.collect())).samples if "le" in s.labels]
    grown = [after - earlier for after, earlier in zip(_buckets(), before["buckets"], strict=True)]
    assert grown == [sample.value for sample in samples]
