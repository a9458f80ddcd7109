"""Comparing a traceset with a baseline: both read from what their inspections stored."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any, Final, Literal

import orjson
from sqlalchemy import Connection

from tracesets.db import comparing
from tracesets.problems import Conflict, InvalidRequest, NotFound, Problem
from tracesets.service import compare
from tracesets.service.core import ServiceCore
from tracesets.service.cursors import CursorKind, decode_cursor

#: Rows the whole comparison shows of its ranks and of its kernels; their routes page on.
FIRST_RANKS: Final = 256
FIRST_KERNELS: Final = 100

Step = Literal["all", "first"]


@dataclass(frozen=True)
class Pair:
    """Both sides of a comparison, and whether their ranks can be matched."""

    side: compare.Side
    baseline: compare.Side

    @cached_property
    def rank_counts(self) -> tuple[int, int]:
        return len(self.side.by_rank()), len(self.baseline.by_rank())

    @property
    def per_rank(self) -> bool:
        ours, theirs = self.rank_counts
        return ours == theirs

    def note(self) -> str | None:
        ours, theirs = self.rank_counts
        if ours == theirs:
            return None
        return (
            f"The tracesets have different rank counts ({ours:,} and {theirs:,}), so ranks "
            "are not matched: only the medians over ranks and the kernels and operators "
            "summed over ranks are compared."
        )

    def ranks(self) -> list[dict[str, Any]]:
        return compare.rank_rows(self.side, self.baseline) if self.per_rank else []

    def kernels(self) -> list[dict[str, Any]]:
        return compare.kernel_rows(self.side, self.baseline)

    def operators(self, step: Step) -> list[dict[str, Any]]:
        return compare.operator_rows(self.side, self.baseline, first=step == "first")


def _unready(traceset_id: str, state: comparing.SideState) -> str | None:
    """Why the traceset cannot be compared yet, or None when it can."""
    if state.status == "pending":
        return f"Traceset {traceset_id} is still being uploaded: complete it first"
    if state.inspection_status is None:
        return f"Traceset {traceset_id} has no inspection (it has no primary file)"
    if state.inspection_status == "failed":
        return f"Traceset {traceset_id}'s inspection failed: there are no figures to compare"
    if state.inspection_status != "done":
        return f"Traceset {traceset_id}'s inspection has not finished: compare it once it has"
    return None


def read_side(
    conn: Connection, member: str, workspace: str, traceset_id: str, *, operators: bool
) -> compare.Side:
    """One side as stored; 404 or 409 naming ``member`` when it cannot be compared."""
    state = comparing.side_state(conn, workspace=workspace, traceset_id=traceset_id)
    if state is None:
        raise NotFound.of(
            [Problem(member, traceset_id, f"No traceset {traceset_id} in this workspace")]
        )
    why = _unready(traceset_id, state)
    if why is not None:
        raise Conflict.of([Problem(member, traceset_id, why)])
    return stored_side(conn, traceset_id, state, operators=operators)


def stored_side(
    conn: Connection, traceset_id: str, state: comparing.SideState, *, operators: bool
) -> compare.Side:
    """An inspected traceset's stored figures, and its operator rows if asked."""
    figures = [orjson.loads(text) for text in comparing.rank_figures(conn, seq=state.seq)]
    rows = comparing.operators(conn, seq=state.seq) if operators else []
    return compare.Side(traceset_id, state.performance, figures, rows)


def _start(cursor: str | None, kind: CursorKind) -> int:
    return decode_cursor(cursor, kind) if cursor is not None else 0


class Comparisons(ServiceCore):
    """The comparison routes' use cases."""

    def _pair(
        self, workspace: str, traceset_id: str, baseline_id: str, *, operators: bool = True
    ) -> Pair:
        if "\x00" in baseline_id:
            raise NotFound.of(
                [Problem("baselineId", baseline_id, f"No traceset {baseline_id!r} here")]
            )
        if traceset_id == baseline_id:
            raise InvalidRequest.of(
                [
                    Problem(
                        "baselineId",
                        baseline_id,
                        "A traceset is compared with another one, not with itself",
                    )
                ]
            )
        with self.db.read() as conn:
            side = read_side(conn, "tracesetId", workspace, traceset_id, operators=operators)
            baseline = read_side(conn, "baselineId", workspace, baseline_id, operators=operators)
        return Pair(side, baseline)

    def compare(self, workspace: str, traceset_id: str, baseline_id: str) -> dict[str, Any]:
        """The whole comparison: its headline and the first page of ranks and kernels."""
        pair = self._pair(workspace, traceset_id, baseline_id)
        ours, theirs = pair.rank_counts
        kernels = pair.kernels()
        ranks, ranks_next = compare.page(pair.ranks(), 0, FIRST_RANKS, CursorKind.COMPARED_RANKS)
        shown, kernels_next = compare.page(kernels, 0, FIRST_KERNELS, CursorKind.COMPARED_KERNELS)
        return {
            "tracesetId": traceset_id,
            "baselineId": baseline_id,
            "rankCount": ours,
            "baselineRankCount": theirs,
            "perRankCompared": pair.per_rank,
            "perRankNote": pair.note(),
            "headline": compare.headline(
                pair.side.performance, pair.baseline.performance, kernels, pair.operators("all")
            ),
            "ranks": ranks,
            "ranksNextCursor": ranks_next,
            "kernels": shown,
            "kernelsNextCursor": kernels_next,
        }

    def compare_ranks(
        self, workspace: str, traceset_id: str, baseline_id: str, *, cursor: str | None, limit: int
    ) -> dict[str, Any]:
        start = _start(cursor, CursorKind.COMPARED_RANKS)
        pair = self._pair(workspace, traceset_id, baseline_id, operators=False)
        items, after = compare.page(pair.ranks(), start, limit, CursorKind.COMPARED_RANKS)
        return {"items": items, "nextCursor": after}

    def compare_kernels(
        self, workspace: str, traceset_id: str, baseline_id: str, *, cursor: str | None, limit: int
    ) -> dict[str, Any]:
        start = _start(cursor, CursorKind.COMPARED_KERNELS)
        pair = self._pair(workspace, traceset_id, baseline_id, operators=False)
        items, after = compare.page(pair.kernels(), start, limit, CursorKind.COMPARED_KERNELS)
        return {"items": items, "nextCursor": after}

    def compare_operators(
        self,
        workspace: str,
        traceset_id: str,
        baseline_id: str,
        *,
        step: Step,
        cursor: str | None,
        limit: int,
    ) -> dict[str, Any]:
        start = _start(cursor, CursorKind.COMPARED_OPERATORS)
        pair = self._pair(workspace, traceset_id, baseline_id)
        rows = pair.operators(step)
        items, after = compare.page(rows, start, limit, CursorKind.COMPARED_OPERATORS)
        return {"items": items, "nextCursor": after}
