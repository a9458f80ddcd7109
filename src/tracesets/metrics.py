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
inspected, failures, leases taken over) is counted where it happens: by this service's
processes, not by ``tracesets worker`` processes, which serve no HTTP.
"""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

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
    "Files whose inspection this service's processes recorded, by outcome (done, failed).",
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
    "When an inspection queue of this service last turned (the latest of its processes).",
    multiprocess_mode="max",
)
