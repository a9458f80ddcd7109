"""The fold's shortcuts give what the plain fold gave.

First, the fold passes over events that cannot change a figure, and only those.

``RankAccumulator.add_all`` skips an event before reading its category and times when it
has no ``args.stream``, no ``args.correlation`` and none of the names that count. Here it
is checked against the plain fold it replaced, every event read in full and folded in,
on events of every shape: the GPU sink's calls, the steps and the collectives must be the
same, in the same order. Second, the GPU events still waiting for their launch at the
end are keyed by a lookup when nothing left the windows, and that must give the same
records as the merge join it stands for.
"""

from __future__ import annotations

import gzip
import math
from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.analysis.test_streaming_exact import TRACES, gpu_traces
from tracesets.analysis.decoding import typed
from tracesets.analysis.gpu import DEVICE_SYNCS, GpuTime, hta_interval
from tracesets.analysis.kernel_stats import KERNEL_CATEGORIES, LAUNCHES, KernelStats
from tracesets.analysis.kernels import GpuEvents
from tracesets.analysis.rank import (
    COLLECTIVE_EVENT,
    DTYPE_BYTES,
    STEP,
    UNKNOWN,
    GroupCollectives,
    OpCount,
    RankAccumulator,
    _correlation,
    _number,
    _stream,
)
from tracesets.inspection.distributed import parse_ranks, whole_number


class Recording:
    """A GPU sink that keeps every call."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def add_gpu(
        self,
        name: str,
        start: float,
        end: float,
        correlation: int,
        stream: int = 0,
        kernel_category: bool = True,
    ) -> None:
        self.calls.append(
            ("gpu", name, start, type(start), end, type(end), correlation, stream, kernel_category)
        )

    def add_launch(self, start: float, correlation: int, call: float = math.nan) -> None:
        self.calls.append(("launch", start, type(start), correlation, str(call)))

    def time(self, last_step: float | None) -> tuple[GpuTime, KernelStats] | None:
        return None


class PlainFold(RankAccumulator):
    """Every event read in full, then folded in: the fold before events were skipped."""

    def add_all(self, events: list[Any]) -> None:
        self.events += len(events)
        for event in events:
            if type(event) is not dict:
                continue
            cat, ts, dur = event.get("cat"), event.get("ts"), event.get("dur")
            if cat is None or cat == "Trace":
                continue
            start = ts if type(ts) in (int, float) else _number(ts)
            length = dur if type(dur) in (int, float) else _number(dur)
            if start is not None and length is not None:
                self._plain(event, start, length)

    def _plain(self, event: dict[str, Any], ts: float, dur: float) -> None:
        name = event.get("name")
        if type(name) is not str:
            name = ""
        args = event.get("args")
        if type(args) is not dict:
            args = {}
        stream, correlation = _stream(args.get("stream")), _correlation(args.get("correlation"))
        on_gpu = (stream >= 0 and correlation >= 0) or name in DEVICE_SYNCS
        if type(ts) is float:
            start, end = hta_interval(ts, dur, fractional=True)
        else:
            start, end = ts, ts + dur
        if stream != -1:
            self.gpu.add_gpu(
                name,
                start,
                end,
                correlation if on_gpu else -1,
                stream,
                event.get("cat") in KERNEL_CATEGORIES,
            )
        step = STEP.match(name)
        if stream < 0 and step is None:
            self.operators.cpu(name, start, end - start)
        if on_gpu:
            return
        if correlation >= 0:
            self.gpu.add_launch(start, correlation, end - start if name in LAUNCHES else math.nan)
        if step is not None:
            self._step(step, start, dur, end)
        elif name == COLLECTIVE_EVENT:
            self._plain_collective(args)

    def _plain_collective(self, args: dict[str, Any]) -> None:
        """The collective counted from the args as a dict, every key read by its name."""
        group_name = args.get("Process Group Name")
        key = str(group_name) if group_name is not None else UNKNOWN
        group = self.groups.get(key)
        if group is None:
            description = args.get("Process Group Description")
            group = self.groups[key] = GroupCollectives(
                name=key,
                description=description if isinstance(description, str) else None,
                ranks=parse_ranks(args.get("Process Group Ranks")),
            )
        op_name = args.get("Collective name")
        counted = group.ops.setdefault(str(op_name) if op_name is not None else UNKNOWN, OpCount())
        counted.count += 1
        elements = whole_number(args.get("In msg nelems"))
        size = DTYPE_BYTES.get(str(args.get("dtype")))
        if elements is not None and size is not None:
            counted.bytes = (counted.bytes or 0) + elements * size


NUMBERS = st.one_of(
    st.integers(-3, 50),
    st.floats(-3, 50, allow_nan=False),
    st.just(-1),
    st.just(-1.0),
    st.booleans(),
    st.none(),
    st.sampled_from(["7", "-1", "x", "2.5"]),
)
ARGS = st.dictionaries(
    st.sampled_from(
        [
            "stream",
            "correlation",
            "Process Group Name",
            "Process Group Description",
            "Process Group Ranks",
            "Collective name",
            "In msg nelems",
            "dtype",
            "other",
        ]
    ),
    st.one_of(NUMBERS, st.sampled_from(["Float", "BFloat16", "allreduce", "[0, 1]"])),
    max_size=6,
)
EVENT = st.fixed_dictionaries(
    {},
    optional={
        "cat": st.sampled_from([None, "Trace", "cpu_op", "kernel", "cuda_runtime", 3]),
        "name": st.one_of(
            st.sampled_from(
                [
                    "aten::mm",
                    "ProfilerStep#3",
                    "ProfilerStep#x",
                    "ProfilerStep#12",
                    COLLECTIVE_EVENT,
                    "ncclKernel_AllReduce",
                    "Memcpy HtoD",
                    "",
                    *DEVICE_SYNCS,
                ]
            ),
            st.integers(),
        ),
        "ts": NUMBERS,
        "dur": NUMBERS,
        "args": st.one_of(ARGS, st.none(), st.just([1])),
    },
)


def state(fold: RankAccumulator) -> tuple[Any, ...]:
    assert isinstance(fold.gpu, Recording)
    groups = [(g.name, g.description, g.ranks, {k: (o.count, o.bytes) for k, o in g.ops.items()})
              for g in fold.groups.values()]  # fmt: skip
    return (fold.events, fold.gpu.calls, list(fold.step_durations), fold.first_step,
            fold.two_steps, fold.last_step, groups)  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(st.lists(st.one_of(EVENT, st.integers(), st.none()), max_size=40))
def test_the_fold_is_the_plain_fold(events: list[Any]) -> None:
    skipping, plain = RankAccumulator(gpu=Recording()), PlainFold(gpu=Recording())
    skipping.add_all(typed(events))
    plain.add_all(events)
    assert state(skipping) == state(plain)


class MergeJoined(GpuEvents):
    """``GpuEvents`` that always joins the waiting events by the merge join."""

    def _join_in_memory(self) -> None:
        self._merge_join()


def joined(events: list[Any], gpu: GpuEvents) -> list[tuple[Any, ...]]:
    fold = RankAccumulator(gpu=gpu)
    fold.add_all(typed(events))
    gpu._join_unmatched()
    return [(*record, *map(type, record)) for record in gpu.records]


@settings(max_examples=300, deadline=None)
@given(events=gpu_traces())
def test_the_join_in_memory_is_the_merge_join(events: list[dict[str, Any]]) -> None:
    """The same records, of the same types, in the same order, for the sweep."""
    assert joined(events, GpuEvents()) == joined(events, MergeJoined())


def test_the_join_in_memory_on_a_real_trace() -> None:
    trace = orjson.loads(gzip.decompress((TRACES / "sampled_rank-0.json.gz").read_bytes()))
    # each kernel before its launch, so all are joined at the end; some launches left out
    events = [
        event
        for at, event in enumerate(trace["traceEvents"][::-1])
        if event.get("cat") != "cuda_runtime" or at % 3
    ]
    records = joined(events, GpuEvents())
    keys = {record[2] == float("inf") for record in records}
    assert len(records) > 200 and keys == {True, False}  # launched, and not
    assert records == joined(events, MergeJoined())
