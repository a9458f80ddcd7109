"""Per-token request rates: a token bucket for each token, in this process.

Each token may send ``rate`` requests a second on average, in bursts of up to
``burst``. The buckets live in the process: with N service processes a token's
effective rate is up to N times the setting, which still bounds what one token can
make the service do. Memory is bounded: past ``max_tokens`` tracked tokens, the
least recently seen are forgotten (they start again with a full bucket).
"""

from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict


class RateLimiter:
    def __init__(self, rate: float, burst: int, *, max_tokens: int = 100_000) -> None:
        if rate <= 0 or burst < 1:
            raise ValueError("rate must be positive and burst at least 1")
        self.rate = rate
        self.burst = burst
        self.max_tokens = max_tokens
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()  # key → (level, at)
        self._lock = threading.Lock()

    def take(self, key: str, *, now: float | None = None) -> float:
        """Spend one request of ``key``'s bucket: 0.0 if allowed, else seconds to wait."""
        at = time.monotonic() if now is None else now
        with self._lock:
            level, last = self._buckets.pop(key, (float(self.burst), at))
            level = min(float(self.burst), level + (at - last) * self.rate)
            if level >= 1.0:
                self._buckets[key] = (level - 1.0, at)
                wait = 0.0
            else:
                self._buckets[key] = (level, at)
                wait = (1.0 - level) / self.rate
            while len(self._buckets) > self.max_tokens:
                self._buckets.popitem(last=False)
        return wait


def retry_after_seconds(wait: float) -> int:
    return max(1, math.ceil(wait))
