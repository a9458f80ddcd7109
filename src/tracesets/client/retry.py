"""When to send a request again, and how long to wait first.

Every request the client sends is safe to repeat: reads and deletes, PUTs of the same
bytes ("sending the same bytes again is harmless"), ``complete`` and ``promote`` (both
answer the same on a repeat), and ``upload-url`` carries one ``Idempotency-Key`` across
its retries, so a retry never creates a second traceset.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

import httpx

#: Statuses that say "try again later" rather than "this request is wrong".
RETRY_STATUSES = frozenset({408, 429, 500, 502, 503, 504})


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """``retries`` more tries after the first, with capped exponential backoff and full jitter."""

    retries: int = 4
    backoff: float = 0.25
    max_delay: float = 20.0

    def retryable(self, outcome: httpx.Response | Exception) -> bool:
        if isinstance(outcome, httpx.Response):
            return outcome.status_code in RETRY_STATUSES
        return isinstance(outcome, httpx.TransportError)

    def delay(self, attempt: int, outcome: httpx.Response | Exception) -> float:
        """Seconds to wait before try ``attempt + 1`` (``attempt`` counts from 0)."""
        if isinstance(outcome, httpx.Response):
            asked = retry_after(outcome)
            if asked is not None:
                return min(asked, self.max_delay)
        return random.uniform(0, min(self.max_delay, self.backoff * 2**attempt))


def retry_after(response: httpx.Response) -> float | None:
    """The wait a ``Retry-After`` header asks for, in seconds (delta or HTTP date)."""
    value = response.headers.get("retry-after", "").strip()
    if not value:
        return None
    if value.isdigit():
        return float(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())
