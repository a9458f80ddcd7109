"""At an inspection's end: compare the traceset with its baseline, and say if it regressed.

Run in the transaction that records the inspection (``service.inspections``), on the
figures just joined and the baseline's stored ones: no trace is read again. The outcome
is stored text (the inspection's ``regression`` member and one warning), so it stays
readable when the baseline is later deleted; ``inspections.regressed`` is the list's
filter. A regression does not change ``ok`` (the traces against their declaration).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Final

import orjson
from sqlalchemy import Connection

from tracesets.db import comparing
from tracesets.service import compare
from tracesets.service.comparisons import stored_side
from tracesets.service.joined import Joined
from tracesets.settings import Settings

#: How the regression's warning starts; the baseline's id and the figures follow.
PREFIX: Final = "Regression against "


@dataclass(frozen=True, slots=True)
class Thresholds:
    """A traceset regressed when its median step is more than ``step_pct`` % slower than
    its baseline's, or its GPU idle more than ``idle_points`` points higher
    (``TRACESETS_REGRESSION_STEP_PCT``, ``TRACESETS_REGRESSION_IDLE_POINTS``)."""

    step_pct: float = 5.0
    idle_points: float = 5.0

    def regressed(self, headline: dict[str, Any]) -> bool:
        step, base_step = headline["stepMs"], headline["baselineStepMs"]
        idle = headline["gpuIdleDiffPct"]
        slower = (
            step is not None
            and base_step is not None
            and step > base_step * (1 + self.step_pct / 100)
        )
        return slower or (idle is not None and idle > self.idle_points)


def thresholds(settings: Settings) -> Thresholds:
    return Thresholds(settings.regression_step_pct, settings.regression_idle_points)


def _signed(value: float) -> str:
    return f"{value:+,.1f}"


def warning(baseline_id: str, headline: dict[str, Any]) -> str:
    """The sentence naming the figures and what changed most."""
    said = []
    if headline["stepRatio"] is not None:
        said.append(
            f"the median step is {headline['stepMs']:,.3f} ms against "
            f"{headline['baselineStepMs']:,.3f} ms ({headline['stepRatio']:.4f} times)"
        )
    if headline["gpuIdleDiffPct"] is not None:
        said.append(
            f"GPU idle is {headline['gpuIdlePct']:.2f} % against "
            f"{headline['baselineGpuIdlePct']:.2f} % ({_signed(headline['gpuIdleDiffPct'])} points)"
        )
    named = [
        f"{c['kind']} {c['name']} ({_signed(c['diffUs'])} µs)" for c in headline["contributors"]
    ]
    if named:
        said.append("most changed: " + ", ".join(named))
    return f"{PREFIX}{baseline_id}: " + "; ".join(said) + "."


def check(conn: Connection, seq: int, joined: Joined, thresholds: Thresholds) -> Joined:
    """The joined inspection, with its comparison added when its baseline is inspected;
    the baseline and the verdict are recorded either way."""
    if joined.status != "done":
        return joined
    workspace, baseline_id = comparing.named_or_chosen_baseline(conn, seq=seq)
    state = (
        None
        if baseline_id is None
        else comparing.side_state(conn, workspace=workspace, traceset_id=baseline_id)
    )
    if baseline_id is None or state is None or state.inspection_status != "done":
        comparing.record_baseline(conn, seq=seq, baseline_id=baseline_id, regressed=None)
        return joined
    baseline = stored_side(conn, baseline_id, state, operators=True)
    figures = [orjson.loads(r) for r in joined.ranks]
    ours = compare.Side("", joined.performance, figures, joined.operators)
    kernels = compare.kernel_rows(ours, baseline)
    operators = compare.operator_rows(ours, baseline, first=False)
    headline = compare.headline(ours.performance, baseline.performance, kernels, operators)
    regressed = thresholds.regressed(headline)
    members = orjson.loads(joined.result)
    members["regression"] = {
        "baselineId": baseline_id,
        "stepRatio": headline["stepRatio"],
        "gpuIdleDiffPct": headline["gpuIdleDiffPct"],
        "contributors": headline["contributors"],
        "regressed": regressed,
    }
    if regressed:
        members["warnings"].append(warning(baseline_id, headline))
    result = orjson.dumps(members)
    comparing.record_baseline(conn, seq=seq, baseline_id=baseline_id, regressed=regressed)
    return replace(joined, result=result)
