"""Medians and 95th percentiles past ``EXACT`` values keep the error the module states:
0.125 µs below ``LINEAR_US``, 0.05 % of the value above; exact up to ``EXACT``."""

from __future__ import annotations

import random
import statistics
from collections.abc import Callable

import numpy as np
import pytest

from tracesets.analysis.distribution import EXACT, LINEAR_US, Distribution

#: One more than a multiple of 20: the median's and the 95th percentile's ranks are
#: whole, so the exact quantiles are values of the data, not between two of them.
COUNT = 2 * EXACT + 21


def allowed(exact: float) -> float:
    return 0.125 if exact < LINEAR_US else 0.0005 * exact


@pytest.mark.parametrize(
    "draw",
    [
        lambda rng: rng.uniform(0, 300),  # short kernels and launches, all below 4.096 ms
        lambda rng: rng.lognormvariate(9, 1.5),  # mostly above: milliseconds to seconds
        lambda rng: rng.choice((3.0, 3.25, 9_000.0)) + rng.random() * 1e-3,  # few values
    ],
    ids=["linear", "logarithmic", "clustered"],
)
def test_past_the_exact_bound_the_quantiles_keep_their_stated_error(
    draw: Callable[[random.Random], float],
) -> None:
    rng = random.Random(5)
    values = [draw(rng) for _ in range(COUNT)]
    spread = Distribution()
    for value in values:
        spread.add(value)
    assert spread.exact is None and spread.count == COUNT
    median, p95 = statistics.median(values), float(np.quantile(values, 0.95))
    assert median == float(np.quantile(values, 0.5))
    got_median, got_p95 = spread.quantile(0.5), spread.quantile(0.95)
    assert got_median is not None and got_p95 is not None
    assert abs(got_median - median) <= allowed(median)
    assert abs(got_p95 - p95) <= allowed(p95)


def test_up_to_the_exact_bound_the_quantiles_are_exact() -> None:
    rng = random.Random(6)
    values = [rng.lognormvariate(5, 2) for _ in range(EXACT)]
    spread = Distribution()
    for value in values:
        spread.add(value)
    assert spread.exact is not None
    assert spread.quantile(0.5) == pytest.approx(float(np.quantile(values, 0.5)), abs=1e-9)
    assert spread.quantile(0.95) == pytest.approx(float(np.quantile(values, 0.95)), abs=1e-9)
    assert Distribution().quantile(0.5) is None
