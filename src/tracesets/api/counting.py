"""Each answered request counted into the request metrics, a turn of the event loop's at once.

In multiprocess mode (``tracesets.metrics``) every increment of a metric is a write to a
file mapped in memory, under a lock and a check of the process id: counting a request
one increment at a time (its count, its duration's sum and bucket, its bytes in and out,
its upload outcome) cost more than the rest of the observer, about 8 µs of upload-url's
time. So a request is added to plain sums held here, and the sums are written at the
end of the loop's turn (``call_soon``): the requests a group commit answers together
are written together, each series once. Nothing is late by more than that turn: a
scrape, a request of its own, is served in a later one, so it counts every request
answered before it, in this process and (they write the same way) in the others.
"""

from __future__ import annotations

import asyncio
from bisect import bisect_left
from dataclasses import dataclass, field
from typing import Any, Final

from tracesets import metrics
from tracesets.problems import TracesetsError

#: The routes whose answers are upload outcomes: (template, method) → what it is.
_UPLOADS: Final = {
    ("/api/v1/tracesets/upload-url", "POST"): "upload-url",
    ("/api/v1/tracesets/{traceset_id}/files", "POST"): "add-files",
    ("/api/v1/blobs/{traceset_id}/{idx}", "PUT"): "put",
    ("/api/v1/tracesets/{traceset_id}/complete", "POST"): "complete",
}


def _slugs(kind: type[TracesetsError]) -> set[str]:
    return {kind.slug}.union(*(_slugs(sub) for sub in kind.__subclasses__()))


#: The problem types a refusal may be counted by; any other is ``other``.
REASONS: Final = frozenset(_slugs(TracesetsError) | {"method-not-allowed"})

#: The duration histogram's bucket bounds (each series has the same).
_BOUNDS: Final[list[float]] = list(metrics.DURATION._upper_bounds)


@dataclass(slots=True)
class _Series:
    """A (route, method, status)'s metric children, made once (looking labels up on every
    request cost more than counting), and what its requests added since the last write."""

    requests: Any
    duration: Any
    received: Any
    sent: Any
    outcomes: tuple[Any, ...]  # the counters each of its requests adds one to
    refusal: bool  # a refused upload: counted by its problem's type (``UPLOADS_REFUSED``)
    count: int = 0
    seconds: float = 0.0
    buckets: list[int] = field(default_factory=lambda: [0] * len(_BOUNDS))
    bytes_in: int = 0
    bytes_out: int = 0

    def write(self) -> None:
        self.requests.inc(self.count)
        # A histogram child's public ``observe`` writes its sum and a bucket per
        # observation; a batch writes each once (prometheus_client's own fields).
        self.duration._sum.inc(self.seconds)
        for index, count in enumerate(self.buckets):
            if count:
                self.duration._buckets[index].inc(count)
                self.buckets[index] = 0
        if self.bytes_in:
            self.received.inc(self.bytes_in)
        if self.bytes_out:
            self.sent.inc(self.bytes_out)
        for counter in self.outcomes:
            counter.inc(self.count)
        self.count, self.seconds, self.bytes_in, self.bytes_out = 0, 0.0, 0, 0


def _series(route: str, method: str, status: int) -> _Series:
    upload = _UPLOADS.get((route, method))
    outcomes: list[Any] = [metrics.RATE_LIMITED] if status == 429 else []
    if upload in ("upload-url", "add-files") and status == 201:
        outcomes.append(metrics.UPLOADS_STARTED.labels(upload))
    elif upload == "complete" and status == 200:
        outcomes.append(metrics.UPLOADS_COMPLETED)
    return _Series(
        metrics.REQUESTS.labels(route, method, str(status)),
        metrics.DURATION.labels(route, method),
        metrics.RECEIVED.labels(route),
        metrics.SENT.labels(route),
        tuple(outcomes),
        upload is not None and status >= 400,
    )


_series_of: dict[tuple[str, str, int], _Series] = {}
#: The series counted since the last write (a write is due while any is), and the
#: refusals among them, by reason.
_dirty: list[_Series] = []
_refused: dict[str, int] = {}


def record(
    route: str,
    method: str,
    status: int,
    seconds: float,
    received: int,
    sent: int,
    fields: dict[str, Any],
) -> None:
    """Count one answered request (``observe.Report``), written at the loop turn's end."""
    key = (route, method, status)
    series = _series_of.get(key)
    if series is None:
        series = _series_of[key] = _series(route, method, status)
    due = bool(_dirty)
    if not series.count:
        _dirty.append(series)
    series.count += 1
    series.seconds += seconds
    series.buckets[bisect_left(_BOUNDS, seconds)] += 1
    series.bytes_in += received
    series.bytes_out += sent
    if series.refusal:
        reason = fields.get("problem")
        reason = reason if reason in REASONS else "other"
        _refused[reason] = _refused.get(reason, 0) + 1
    if not due:
        try:
            asyncio.get_running_loop().call_soon(write)
        except RuntimeError:  # no loop to write it later
            write()


def write() -> None:
    """Write what the requests counted since the last write to the metrics."""
    for series in _dirty:
        series.write()
    _dirty.clear()
    for reason, count in _refused.items():
        metrics.UPLOADS_REFUSED.labels(reason).inc(count)
    _refused.clear()
