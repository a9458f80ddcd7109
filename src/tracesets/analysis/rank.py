"""What one trace's events say about its rank: steps, GPU time, collectives.

``RankAccumulator.add_all`` sees each event once, in file order, and keeps only running
figures: step durations (8 bytes per ``ProfilerStep``, up to ``MAX_STEPS``: their median
needs them all), collective counts per process group, and ``gpu`` (``kernels``: the GPU
events, in bounded memory). Events that are not objects, or whose fields have the wrong
types, are skipped, never fatal.
"""

from __future__ import annotations

import math
import re
import statistics
from array import array
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

from tracesets.analysis import compiled
from tracesets.analysis.compiled import CompiledGpuEvents, CompiledOperators
from tracesets.analysis.decoding import NO_ARGS, EventArgs, TraceEvent
from tracesets.analysis.gpu import DEVICE_SYNCS, GpuTime, hta_interval
from tracesets.analysis.kernel_stats import KERNEL_CATEGORIES, LAUNCHES, KernelStats
from tracesets.analysis.operators import OperatorCounter, OperatorRow
from tracesets.analysis.spill import SpillFailed
from tracesets.inspection.distributed import MAX_WHOLE, parse_ranks, whole_number

#: HTA's ``ProfilerStepGroupingPattern``.
STEP: Final = re.compile(r"^ProfilerStep#(\d+)")
#: Step durations kept per rank; a trace has tens, a long one thousands.
MAX_STEPS: Final = 1_000_000
#: Process groups and operations tracked per rank.
MAX_GROUPS: Final = 4096
MAX_OPS: Final = 64
#: The CPU-side event PyTorch records once per collective, NCCL or Gloo alike.
COLLECTIVE_EVENT: Final = "record_param_comms"
UNKNOWN: Final = "unknown"

#: Bytes per element of the dtypes PyTorch names in ``record_param_comms``.
DTYPE_BYTES: Final = {
    "Float": 4, "Double": 8, "Half": 2, "BFloat16": 2, "Int": 4, "Long": 8, "Short": 2,
    "Char": 1, "Byte": 1, "Bool": 1, "ComplexFloat": 8, "ComplexDouble": 16,
    "ComplexHalf": 4, "UInt16": 2, "UInt32": 4, "UInt64": 8, "Float8_e4m3fn": 1,
    "Float8_e5m2": 1, "Float8_e4m3fnuz": 1, "Float8_e5m2fnuz": 1,
}  # fmt: skip


@dataclass(frozen=True, slots=True)
class Steps:
    count: int
    min_us: float | None
    median_us: float | None
    max_us: float | None


@dataclass(slots=True)
class OpCount:
    count: int = 0
    bytes: int | None = None  # None when no call of the operation recorded its size


@dataclass(slots=True)
class GroupCollectives:
    """The collectives one rank issued in one process group."""

    name: str
    description: str | None = None
    ranks: list[int] | None = None
    ops: dict[str, OpCount] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class RankAnalysis:
    """What one trace's events say; ``problem`` when they could not all be read."""

    events: int
    steps: Steps
    gpu: GpuTime | None
    collectives: list[GroupCollectives]
    problem: str | None = None
    kernels: KernelStats | None = None  # None with ``gpu``
    operators: list[OperatorRow] = field(default_factory=list)


_NUMBERS: Final = (int, float)
#: Names that count without a stream or a correlation (steps go by their prefix).
_NAMED: Final = frozenset((COLLECTIVE_EVENT, *DEVICE_SYNCS))


def _number(value: object) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return None


def _stream(stream: object) -> int:
    """``args.stream`` as HTA reads it: a number (or numeric string), else -1."""
    if isinstance(stream, int) and not isinstance(stream, bool):
        return stream
    if isinstance(stream, float) and math.isfinite(stream):
        return int(stream)
    if isinstance(stream, str):
        try:
            return int(float(stream))
        except (ValueError, OverflowError):
            return -1
    return -1


def _correlation(correlation: object) -> int:
    if isinstance(correlation, int) and not isinstance(correlation, bool):
        return correlation
    return -1


def spill_failed(error: SpillFailed) -> str:
    """Why a rank has no GPU figures when their temporary file failed: the machine's fault,
    not the trace's, so the other figures stand."""
    return (
        "the GPU figures were not computed: their temporary file failed "
        f"({error.strerror or error}); the service's temporary folder (TMPDIR) needs room "
        "for about 6 % of the trace"
    )


class GpuSink(Protocol):
    """Where the GPU events and launches go: ``GpuEvents``, or in tests a reference."""

    def add_gpu(
        self,
        name: str,
        start: float,
        end: float,
        correlation: int,
        stream: int = 0,
        kernel_category: bool = True,
    ) -> None: ...
    def add_launch(self, start: float, correlation: int, call: float = math.nan) -> None: ...
    def time(self, last_step: float | None) -> tuple[GpuTime, KernelStats] | None: ...


class RankAccumulator:
    """Running figures of one trace, fed one event at a time."""

    def __init__(
        self,
        gpu: GpuSink | None = None,
        operators: OperatorCounter | CompiledOperators | None = None,
    ) -> None:
        """``gpu`` and ``operators`` given in tests; else both compiled where the extension
        was built, both the reference where not (``compiled.sinks``)."""
        self.events = 0
        self.step_durations = array("d")
        self.first_step: str | None = None
        self.two_steps = False  # two differently named steps: HTA's filter applies
        self.last_step: float | None = None
        self.operators: OperatorCounter | CompiledOperators
        self.gpu: GpuSink
        if gpu is None:
            self.operators, self.gpu = compiled.sinks()
        else:
            self.operators, self.gpu = operators or OperatorCounter(), gpu
        # the event loop in C when both sinks are compiled: it hands events to them directly
        self.compiled_sinks = (
            (self.gpu, self.operators)
            if isinstance(self.gpu, CompiledGpuEvents)
            and isinstance(self.operators, CompiledOperators)
            else None
        )
        self.groups: dict[str, GroupCollectives] = {}
        #: A figure that would pass 64 bits, left uncounted: the figures are kept and
        #: served as JSON of 64-bit integers, and no real trace comes near.
        self.past_64_bits: str | None = None

    def add_all(self, events: list[Any]) -> None:  # noqa: PLR0915 (one loop per event)
        """Fold a batch of events in (``decoding.TraceEvent``s; other items are not
        objects), one loop: this runs once per event of every trace.

        An event changes a figure only through its ``args.stream`` or ``args.correlation``
        (a GPU event, a launch) or its name (a step, a collective, a device sync): one
        with neither key and another name is passed over before anything else is read,
        which is about half of a training step's events (CPU operators, annotations).
        The common shapes (numbers as ints or floats, ``stream`` and ``correlation`` as
        ints) take a fast path; the rest are coerced as HTA reads them.
        """
        self.events += len(events)
        if self.compiled_sinks is not None:
            gpu, operators = self.compiled_sinks
            compiled.fold_events(events, gpu, operators, self._step, self._collective)
            return
        numbers = _NUMBERS
        add_gpu, add_launch = self.gpu.add_gpu, self.gpu.add_launch
        ops = self.operators
        assert isinstance(ops, OperatorCounter)  # the compiled counts go with the loop in C
        count_cpu, by_name = ops.cpu, ops.by_name
        for event in events:
            if type(event) is not TraceEvent:
                continue
            args = event.args
            if type(args) is not EventArgs:
                args = NO_ARGS
            stream = args.stream
            correlation = args.correlation
            name = event.name
            if type(name) is not str:
                name = ""
            cat, ts, dur = event.cat, event.ts, event.dur
            # (bools are ints to isinstance, not to type: True is no timestamp)
            if cat is None or cat == "Trace":
                continue
            start = ts if type(ts) in numbers else _number(ts)
            length = dur if type(dur) in numbers else _number(dur)
            if start is None or length is None:
                continue
            # -1 (or -1.0) is what both read as when absent: then only the name counts
            if (
                stream == -1
                and correlation == -1
                and name not in _NAMED
                and not name.startswith("ProfilerStep")
            ):
                if type(start) is float:
                    start, end = hta_interval(start, length, fractional=True)
                    length = end - start
                # in the step the previous event fell in, of a name seen: count it here
                if ops.low <= start < ops.high and (cell := by_name.get(name)) is not None:
                    cell[0] += 1
                    cell[1] += length
                    if ops.in_first:
                        cell[2] += 1
                        cell[3] += length
                else:
                    count_cpu(name, start, length)
                continue
            if type(stream) is not int:
                stream = _stream(stream)
            if type(correlation) is not int:
                correlation = _correlation(correlation)
            on_gpu = (stream >= 0 and correlation >= 0) or name in DEVICE_SYNCS
            if type(start) is float:  # HTA rounds nanosecond timestamps inwards
                start, end = hta_interval(start, length, fractional=True)
            else:
                end = start + length
            if stream != -1:
                add_gpu(
                    name,
                    start,
                    end,
                    correlation if on_gpu else -1,
                    stream,
                    cat in KERNEL_CATEGORIES,
                )
            step = STEP.match(name) if name.startswith("ProfilerStep") else None
            if stream < 0 and step is None:
                count_cpu(name, start, end - start)
            if on_gpu:
                continue
            if correlation >= 0:
                add_launch(start, correlation, end - start if name in LAUNCHES else math.nan)
            if step is not None:
                self._step(step, start, length, end)
            elif name == COLLECTIVE_EVENT:
                self._collective(args)

    def _step(self, step: re.Match[str], ts: float, dur: float, end: float) -> None:
        name = step.string
        self.operators.step(int(step.group(1)), name, ts, end)
        if len(self.step_durations) < MAX_STEPS:
            self.step_durations.append(dur)
        if self.first_step is None:
            self.first_step = name
        elif name != self.first_step:
            self.two_steps = True
        if self.last_step is None or ts > self.last_step:
            self.last_step = ts

    def _collective(self, args: EventArgs) -> None:
        group_name = args.group_name
        key = str(group_name) if group_name is not None else UNKNOWN
        group = self.groups.get(key)
        if group is None:
            if len(self.groups) >= MAX_GROUPS:
                return
            description = args.group_description
            group = GroupCollectives(
                name=key,
                description=description if isinstance(description, str) else None,
                ranks=parse_ranks(args.group_ranks),
            )
            self.groups[key] = group
        op_name = args.collective
        op = str(op_name) if op_name is not None else UNKNOWN
        counted = group.ops.get(op)
        if counted is None:
            if len(group.ops) >= MAX_OPS:
                return
            counted = group.ops[op] = OpCount()
        counted.count += 1
        elements = whole_number(args.elements)
        if elements is None and type(args.elements) is int and args.elements > 0:
            elements = args.elements  # past 64 bits: the total says so below
        size = DTYPE_BYTES.get(str(args.dtype))
        if elements is not None and size is not None:
            total = (counted.bytes or 0) + elements * size
            if total <= MAX_WHOLE:
                counted.bytes = total
            else:
                self.past_64_bits = (
                    f"the bytes of {op} in process group {key} pass 2^63 - 1 (its "
                    'record_param_comms events\' "In msg nelems"): the calls past it are '
                    "not counted"
                )

    def result(self, problem: str | None = None, *, gpu: bool = True) -> RankAnalysis:
        """The figures; ``gpu=False`` when the GPU events' spill failed while they were
        read: the events kept are not all of them, so no GPU figure is given."""
        durations = sorted(self.step_durations)
        steps = Steps(
            count=len(durations),
            min_us=durations[0] if durations else None,
            median_us=statistics.median(durations) if durations else None,
            max_us=durations[-1] if durations else None,
        )
        # HTA drops the GPU work of the last step only when there are two steps or more.
        last_step = self.last_step if self.two_steps else None
        timed = None
        try:
            timed = self.gpu.time(last_step) if gpu else None
        except SpillFailed as error:  # the records' temporary file: TMPDIR full, or gone
            problem = "; ".join(p for p in (problem, spill_failed(error)) if p)
        gpu_time, kernels = (None, None) if timed is None else timed
        past_64_bits = self.past_64_bits
        if gpu_time is not None and not abs(gpu_time.kernel_us) <= MAX_WHOLE:
            past_64_bits = (
                f"the GPU time spans {gpu_time.kernel_us:.6g} µs, past 2^63 - 1: an event's ts "
                "or dur is out of range"
            )
        return RankAnalysis(
            events=self.events,
            steps=steps,
            gpu=gpu_time,
            kernels=kernels,
            collectives=sorted(self.groups.values(), key=lambda g: g.name),
            operators=self.operators.rows(),
            problem="; ".join(p for p in (problem, past_64_bits) if p) or None,
        )


if compiled.NATIVE:  # what the loop in C reads of an event, and hands back to Python
    compiled.configure(
        TraceEvent,
        EventArgs,
        NO_ARGS,
        STEP.match,
        _stream,
        KERNEL_CATEGORIES,
        LAUNCHES,
        DEVICE_SYNCS,
        _NAMED,
        COLLECTIVE_EVENT,
    )
