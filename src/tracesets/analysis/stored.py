"""One file's findings and figures as JSON, kept until its traceset's last file is done.

Files of one traceset are read by different processes; the one that finishes the last
file joins them all and runs the checks across ranks. What passes between them is this
JSON, which gives back the very dataclasses it was made from (floats exactly: orjson
writes each float's shortest round-tripping form).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson

from tracesets.analysis.files import TraceAnalysis
from tracesets.analysis.gpu import GpuTime
from tracesets.analysis.kernel_stats import (
    KernelRow,
    KernelStats,
    KernelType,
    LaunchStats,
    StreamIdle,
)
from tracesets.analysis.operators import OperatorRow
from tracesets.analysis.rank import GroupCollectives, OpCount, RankAnalysis, Steps
from tracesets.inspection.findings import FileFinding


def dumps(findings: Sequence[FileFinding], traces: Sequence[TraceAnalysis]) -> str:
    # orjson writes dataclasses itself, fields only, in microseconds; dataclasses.asdict
    # deep-copies every process group's rank list first: milliseconds a file.
    return orjson.dumps({"findings": findings, "traces": traces}).decode()


def _group(data: dict[str, Any]) -> GroupCollectives:
    ops = {op: OpCount(**counted) for op, counted in data["ops"].items()}
    return GroupCollectives(data["name"], data["description"], data["ranks"], ops)


def _kernels(data: dict[str, Any] | None) -> KernelStats | None:
    if data is None:
        return None
    return KernelStats(
        types=[KernelType(**t) for t in data["types"]],
        top=[KernelRow(**k) for k in data["top"]],
        idle=[StreamIdle(**s) for s in data["idle"]],
        launches=LaunchStats(**data["launches"]),
    )


def _trace(data: dict[str, Any]) -> TraceAnalysis:
    a = data["analysis"]
    analysis = RankAnalysis(
        events=a["events"],
        steps=Steps(**a["steps"]),
        gpu=None if a["gpu"] is None else GpuTime(**a["gpu"]),
        collectives=[_group(g) for g in a["collectives"]],
        problem=a["problem"],
        kernels=_kernels(a.get("kernels")),
        operators=[OperatorRow(**o) for o in a.get("operators", ())],
    )
    return TraceAnalysis(data["file"], data["member"], analysis)


def loads(text: str) -> tuple[list[FileFinding], list[TraceAnalysis]]:
    data = orjson.loads(text)
    return [FileFinding(**f) for f in data["findings"]], [_trace(t) for t in data["traces"]]
