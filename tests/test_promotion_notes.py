"""Promotion's warnings while the traces are still being read, or could not be, say so."""

from __future__ import annotations

from datetime import UTC, datetime

import orjson
import pytest

from tracesets.records import InspectionRecord, Traceset
from tracesets.service.catalog import FAILED, NOT_FINISHED, WHY_CHARS, inspection_warnings
from tracesets.service.joined import FAILURE_PREFIX


def _traceset(inspection: InspectionRecord | None) -> Traceset:
    now = datetime.now(UTC)
    return Traceset(
        seq=1, id="t", workspace="w", name="n", description=None, status="promoted",
        created_at=now, updated_at=now, promoted_at=now, workload_metadata=None,
        rank_count=8, files=[], inspection=inspection,
    )  # fmt: skip


@pytest.mark.parametrize("status", ["pending", "running"])
def test_an_unfinished_inspection_is_a_warning_of_its_own(status: str) -> None:
    assert inspection_warnings(_traceset(InspectionRecord(status, None))) == [NOT_FINISHED]


def test_a_finished_inspection_gives_its_warnings() -> None:
    result = orjson.dumps({"warnings": ["6 of 8 declared ranks have no trace: 2-7."]})
    assert inspection_warnings(_traceset(InspectionRecord("done", result))) == [
        "6 of 8 declared ranks have no trace: 2-7."
    ]
    assert inspection_warnings(_traceset(None)) == []


def test_a_failed_inspection_is_a_warning_saying_why_briefly() -> None:
    result = orjson.dumps({"warnings": [FAILURE_PREFIX + "rank0.json: " + "x" * 1_000]})
    [warning] = inspection_warnings(_traceset(InspectionRecord("failed", result)))
    assert warning.startswith(FAILED.format(why="rank0.json: x"))
    assert len(warning) < len(FAILED) + WHY_CHARS and warning.endswith("…")
    [unknown] = inspection_warnings(_traceset(InspectionRecord("failed", None)))
    assert unknown == FAILED.format(why="no reason recorded")
