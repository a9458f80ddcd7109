"""Operator counts by step: what HTA's iteration rule gives, whatever the order the
events are written in, in bounded memory."""

from __future__ import annotations

from typing import Any

import pytest

from tracesets.analysis import operators
from tracesets.analysis.decoding import typed
from tracesets.analysis.operators import OTHER, STEPS, OperatorRow
from tracesets.analysis.rank import RankAccumulator


def cpu(name: str, ts: int, dur: int, **args: Any) -> dict[str, Any]:
    return {"ph": "X", "cat": "cpu_op", "name": name, "ts": ts, "dur": dur, "args": args}


def step(number: int, ts: int, dur: int) -> dict[str, Any]:
    return {**cpu(f"ProfilerStep#{number}", ts, dur), "cat": "user_annotation"}


def rows(events: list[dict[str, Any]]) -> dict[str, OperatorRow]:
    accumulator = RankAccumulator()
    accumulator.add_all(typed(events))
    return {row.name: row for row in accumulator.result().operators}


def test_a_step_written_after_its_events_still_holds_them() -> None:
    found = rows([
        cpu("aten::mm", 10, 5), cpu("aten::add", 20, 1), step(3, 0, 100),
        cpu("aten::mm", 110, 5), step(4, 100, 100), cpu("aten::mm", 250, 7),
    ])  # fmt: skip
    assert found["aten::mm"] == OperatorRow("aten::mm", 2, 10.0, 1, 5.0)
    assert found["aten::add"] == OperatorRow("aten::add", 1, 1.0, 1, 1.0)
    assert found[STEPS] == OperatorRow(STEPS, 2, 200.0, 0, 0.0)
    assert found["ProfilerStep#3"] == OperatorRow("ProfilerStep#3", 0, 0.0, 1, 100.0)
    assert "ProfilerStep#4" not in found  # the event at 250 is in no step, so counted nowhere


def test_the_first_step_is_the_smallest_number_whatever_the_order() -> None:
    found = rows([step(8, 100, 100), cpu("late", 150, 2), step(7, 0, 100), cpu("early", 50, 3)])
    assert (found["late"].first_count, found["early"].first_count) == (0, 1)
    assert found["ProfilerStep#7"].first_count == 1 and "ProfilerStep#8" not in found


def test_a_kernel_counts_in_its_launchs_step_even_when_it_runs_after_it() -> None:
    found = rows([
        step(1, 0, 100),
        cpu("cudaLaunchKernel", 90, 5, correlation=7),
        {"ph": "X", "cat": "kernel", "name": "gemm", "ts": 150, "dur": 40,
         "args": {"stream": 7, "correlation": 7}},
        step(2, 100, 100),
        {"ph": "X", "cat": "kernel", "name": "orphan", "ts": 160, "dur": 4,
         "args": {"stream": 7, "correlation": 99}},
    ])  # fmt: skip
    assert found["gemm"] == OperatorRow("gemm", 1, 40.0, 1, 40.0)
    assert "orphan" not in found  # no CPU event launched it: in no iteration, as in HTA


def test_names_and_rows_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(operators, "MAX_NAMES", 5)
    monkeypatch.setattr(operators, "MAX_OPERATOR_ROWS", 3)
    events = [step(1, 0, 1000)] + [cpu(f"op{i}", 10 + i, 10 - i) for i in range(8)]
    found = rows(events)
    # kept: the step row, the first step's own row, op0 to op2; op3 to op7 are past the names
    assert list(found) == [STEPS, "op0", OTHER]
    assert found[OTHER].count == 7 and found[OTHER].total_us == 9 + 8 + 7 + 6 + 5 + 4 + 3
    assert found[OTHER].first_count == 8  # op1 to op7 and the step's own event
    assert sum(r.count for r in found.values()) == 1 + 8
