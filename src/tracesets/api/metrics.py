"""GET /metrics: the service's Prometheus metrics, to whom ``TRACESETS_METRICS`` allows.

``loopback`` (the default): clients on 127.0.0.0/8 or ::1 only, a Prometheus or an agent
on the same machine; any other client is told there is no such route (404), as with
``off``. uvicorn takes a client's address from ``X-Forwarded-For`` only when the proxy
itself is on loopback, so a local proxy's clients are not loopback ones. ``token``: a
bearer token with the ``metrics`` scope (``tracesets token create --scope metrics``).
``open``: anyone. Every request is counted by ``counting.record``, called by
``observe.Observer`` outside the whole stack, hot routes included.
"""

from __future__ import annotations

import ipaddress
import os
import time
from datetime import UTC
from typing import Any, Final

from fastapi import APIRouter, Request, Response
from fastapi.concurrency import run_in_threadpool
from prometheus_client import REGISTRY, CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4
from prometheus_client.multiprocess import MultiProcessCollector, mark_process_dead
from prometheus_client.registry import Collector

from tracesets import metrics
from tracesets.api import counting
from tracesets.api.deps import Service, authenticate, workspace_of
from tracesets.api.openapi import errors
from tracesets.problems import NotFound, Problem
from tracesets.service.inspections import queue_figures
from tracesets.settings import MULTIPROC_DIR, Settings

router = APIRouter(tags=["service"])


class _Queue(Collector):
    """The inspection queue's gauges, read from the database at scrape time."""

    def __init__(self, service: Any) -> None:
        self.service = service

    def collect(self) -> Any:
        figures = queue_figures(self.service.db)
        age = 0.0
        if figures.oldest_since is not None:
            since = figures.oldest_since
            if since.tzinfo is None:
                since = since.replace(tzinfo=UTC)
            age = max(0.0, time.time() - since.timestamp())
        for name, text, value in (
            (
                "tracesets_inspection_pending_files",
                "Files of running inspections not claimed yet (every process's queue).",
                figures.pending_files,
            ),
            (
                "tracesets_inspection_unfinished",
                "Inspections queued or running.",
                figures.unfinished,
            ),
            (
                "tracesets_inspection_oldest_unfinished_age_seconds",
                "Age of the oldest unfinished inspection's traceset (0 when none).",
                age,
            ),
            (
                "tracesets_inspection_claimants",
                "Processes holding a live claim on a file (service processes and workers).",
                figures.claimants,
            ),
        ):
            yield GaugeMetricFamily(name, text, value=value)


def exposition(service: Any) -> bytes:
    """Every process's metrics summed (or this process's), and the queue's gauges."""
    if MULTIPROC_DIR in os.environ:
        counted = CollectorRegistry()
        MultiProcessCollector(counted)  # type: ignore[no-untyped-call]
    else:
        counted = REGISTRY
    queue = CollectorRegistry()
    queue.register(_Queue(service))
    return generate_latest(counted) + generate_latest(queue)


def count_process() -> None:
    """This process serves from now on (``tracesets_service_processes``)."""
    metrics.PROCESSES.set(1)


def forget_process() -> None:
    """This process exits: its live gauges leave the shared folder (its counters stay,
    with the requests counted last)."""
    counting.write()
    if MULTIPROC_DIR in os.environ:
        mark_process_dead(os.getpid())  # type: ignore[no-untyped-call]


def _loopback(request: Request) -> bool:
    client = request.client
    if client is None:
        return False
    try:
        return ipaddress.ip_address(client.host).is_loopback
    except ValueError:
        return False


_OK: Final[dict[int | str, dict[str, Any]]] = {
    200: {
        "description": "The metrics, in Prometheus's text format.",
        "content": {"text/plain": {"schema": {"type": "string"}}},
    },
    **errors(401, 403, 429),
    404: {
        **errors(404)[404],
        "description": "Metrics are off (`TRACESETS_METRICS=off`), or served only to "
        "loopback clients (the default) and this client is not one.",
    },
}


@router.get(
    "/metrics",
    summary="Prometheus metrics of the service: requests, uploads, the inspection queue",
    description="Counted over every process of the service. Who may read them is "
    "`TRACESETS_METRICS`'s choice: `loopback` (the default: clients on 127.0.0.0/8 or ::1), "
    "`token` (a bearer token with the `metrics` scope), `open` or `off`. No label holds an "
    "id, a name or a token.",
    operation_id="metrics",
    response_class=Response,
    responses=_OK,
)
async def get_metrics(request: Request, service: Service) -> Response:
    settings: Settings = request.app.state.settings
    if settings.metrics == "off" or (settings.metrics == "loopback" and not _loopback(request)):
        raise NotFound.of([Problem("path", request.url.path, "No such route")])
    if settings.metrics == "token":
        workspace_of(await authenticate(request), "metrics")
    body = await run_in_threadpool(exposition, service)
    return Response(body, media_type=CONTENT_TYPE_PLAIN_0_0_4)
