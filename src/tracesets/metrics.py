"""The service's Prometheus metrics, counted where things happen, summed over its processes.

``tracesets serve --workers N`` runs N processes behind one port: a scrape reaches one of
them. So the serving process makes a folder of its own before any worker starts and
names it in ``PROMETHEUS_MULTIPROC_DIR`` (``settings.MULTIPROC_DIR``): every process keeps its
values there (prometheus_client's multiprocess mode), and a scrape sums them. The folder
is new and empty at each start and removed at exit, so nothing of an earlier run is
counted. No label holds an id, a name or a token: routes are templates, statuses and
reasons come from bounded sets, so the number of series stays bounded whatever clients
send.

The inspection queue's depth and age are read from the database at scrape time
(``service.inspections.queue_figures``): every process of every machine adds to and takes
from the queue, and only the database sees all of it. What happens in a process (files
inspected, failures, leases taken over, its queue's heartbeat) is counted where it
happens, in the process that claims and records the files (never in its pool of
readers): a service's, or a ``tracesets worker``'s, which serves these alone on a port of
its own when asked (``serve_worker``). Prometheus sums them across the targets it
scrapes, under the same names.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    disable_created_metrics,
    start_http_server,
)
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

REQUESTS = Counter(
    "tracesets_http_requests",
    "Requests answered, by route template, method and status.",
    ["route", "method", "status"],
)
DURATION = Histogram(
    "tracesets_http_request_duration_seconds",
    "Time from a request's arrival to its answer's last byte, by route template.",
    ["route", "method"],
)
RECEIVED = Counter(
    "tracesets_http_received_bytes", "Request body bytes received, by route template.", ["route"]
)
SENT = Counter("tracesets_http_sent_bytes", "Answer body bytes sent, by route template.", ["route"])
UPLOADS_STARTED = Counter(
    "tracesets_uploads_started",
    "Uploads started: upload-url (a new traceset) and add-files requests answered 201.",
    ["via"],
)
UPLOADS_COMPLETED = Counter(
    "tracesets_uploads_completed", "Tracesets made ready by complete (answered 200)."
)
UPLOADS_REFUSED = Counter(
    "tracesets_uploads_refused",
    "Refused upload-url, add-files, file PUT and complete requests, by problem type.",
    ["reason"],
)
RATE_LIMITED = Counter(
    "tracesets_rate_limited", "Requests refused for their token's request rate (429)."
)
FILES_INSPECTED = Counter(
    "tracesets_inspection_files",
    "Files whose inspection this process recorded, by outcome (done, failed).",
    ["outcome"],
)
TAKEOVERS = Counter(
    "tracesets_inspection_takeovers",
    "Files claimed after their claimant's lease ran out (it died or stalled).",
)
PROCESSES = Gauge(
    "tracesets_service_processes",
    "Service processes serving now (each adds itself at start, and is dropped as it exits).",
    multiprocess_mode="livesum",
)
HEARTBEAT = Gauge(
    "tracesets_inspection_heartbeat_timestamp_seconds",
    "When this process's inspection queue last turned (a service's: the latest of its processes).",
    multiprocess_mode="max",
)


class _WorkerMetrics(Collector):
    """What a worker counts: its inspections. Not the requests' metrics (it serves none,
    and zeros under their names would read as a service answering nothing), nor the
    queue's gauges (the services read them from the database; a worker's too would be
    counted twice by a sum across targets)."""

    def collect(self) -> Iterator[Metric]:
        for metric in (FILES_INSPECTED, TAKEOVERS, HEARTBEAT):
            yield from metric.collect()


def serve_worker(host: str, port: int) -> Callable[[], None]:
    """Serve this worker's metrics at ``http://host:port/metrics`` from a thread; the
    function returned closes the port. Raises OSError when the port cannot be had."""
    # A service's metrics (multiprocess mode) carry no ``_created`` series: nor do a
    # worker's, so both offer the same names.
    disable_created_metrics()  # type: ignore[no-untyped-call]
    registry = CollectorRegistry()
    registry.register(_WorkerMetrics())
    server, thread = start_http_server(port, addr=host, registry=registry)

    def close() -> None:
        server.shutdown()
        server.server_close()
        thread.join()

    return close
