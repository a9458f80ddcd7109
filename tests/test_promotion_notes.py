"""Promotion's warnings while the traces are still being read say so."""

from __future__ import annotations

from datetime import UTC, datetime

import orjson
import pytest

from tracesets.records import InspectionRecord, Traceset
from tracesets.service.catalog import NOT_FINISHED, inspection_warnings


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
