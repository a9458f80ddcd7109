"""What the hardening tests did, printed at the end of the run (conftest.py)."""

from __future__ import annotations

from collections import Counter

#: Requests the fuzzer sent, by operation and by status answered.
FUZZED: Counter[str] = Counter()
STATUSES: Counter[int] = Counter()

#: One line per crash trial the service survived.
CRASH_TRIALS: list[str] = []


def summary() -> list[str]:
    lines = []
    if FUZZED:
        statuses = ", ".join(f"{status}: {n:,}" for status, n in sorted(STATUSES.items()))
        lines.append(
            f"fuzzed {sum(FUZZED.values()):,} requests over {len(FUZZED)} operations "
            f"({statuses}); 5xx: {sum(n for s, n in STATUSES.items() if s >= 500)}"
        )
    lines.extend(CRASH_TRIALS)
    return lines
