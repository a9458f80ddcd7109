"""GPU time of one rank, with Holistic Trace Analysis's definitions, from its events.

HTA (``hta/analyzers/breakdown_analysis.py``, ``communication_analysis.py``, version 0.5)
loads every event into pandas; these are its definitions, kept exactly, on events seen
one at a time:

- A GPU event is any event with a ``dur`` and a ``cat`` (not ``Trace``) whose
  ``args.stream`` is a number other than -1.
- When the trace has at least two ``ProfilerStep#N``, HTA keeps only the GPU events
  launched before the last step began: a GPU event (stream and correlation of at least 0)
  is kept when a CPU-side event with the same ``args.correlation`` starts before the
  last ``ProfilerStep``; any other event is kept when it starts before it.
- A kernel is communication (``nccl...Kernel...``), memory (``Memcpy...``,
  ``Memset...``, ``dma...``), computation (any other name but ``...Memcpy...``,
  ``Memset...`` and ``...Sync...``), or other: ``hta/utils/utils.py``'s
  ``get_kernel_type``, the one function all of HTA's breakdowns use, whatever the
  device. (``hta/common/types.py`` has a longer pattern that also calls ``pe_exe``,
  ``job_exe``, ``runFunction`` and ``...dma...`` names not computation, but no
  breakdown uses it: an MTIA trace's ``pe_exe`` jobs are computation to HTA.)
- ``kernelUs`` is the span from the first kernel's start to the last one's end;
  ``idleUs`` the part of it where no GPU event runs; ``computeUs`` the time a computation
  kernel runs; ``nonComputeUs`` the rest; each also as a percentage of the span, to two
  decimals.
- The overlap is the share of communication time (the union of communication kernels)
  during which a computation kernel also runs.

Beyond HTA, the non-compute time is split in ``communicationUs`` (no computation
running), ``memoryUs`` (neither computation nor communication) and ``otherUs``.

Memory does not grow with the trace: the events are paired with their launches and
sorted by ``kernels`` (a window of recent launches, and runs of sorted records spilled to
a temporary file past a bound), then ``sweep`` reads them once in start order, keeping
a few numbers.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from tracesets.analysis.kernel_stats import KernelFold, KernelStats
    from tracesets.analysis.operators import OperatorCounter

COMMUNICATION: Final = 0
MEMORY: Final = 1
COMPUTATION: Final = 2
OTHER: Final = 3
KINDS: Final = 4

_COMMUNICATION: Final = re.compile(r"^nccl.*Kernel")
_MEMORY: Final = re.compile(r"(^Memcpy)|(^Memset)|(^dma)")
# HTA's alternatives as HTA writes them: ``.*(Memcpy)`` or ``(Memset)`` at the start
_NOT_COMPUTATION: Final = re.compile(r"(^nccl.*Kernel)|(.*(Memcpy)|(Memset))|(.*Sync)")
#: Device-wide synchronisations: GPU events for HTA's filter even without a stream.
DEVICE_SYNCS: Final = frozenset(("Event Sync", "Context Sync"))


def kernel_kind(name: str) -> int:
    """HTA's ``get_kernel_type``: communication, memory, computation or other."""
    if _COMMUNICATION.match(name):
        return COMMUNICATION
    if _MEMORY.match(name):
        return MEMORY
    if not _NOT_COMPUTATION.match(name):
        return COMPUTATION
    return OTHER


@dataclass(frozen=True, slots=True)
class GpuTime:
    """One rank's GPU time: HTA's temporal breakdown and its overlap, in µs and percent."""

    kernel_us: float
    idle_us: float
    compute_us: float
    non_compute_us: float
    idle_pct: float | None
    compute_pct: float | None
    non_compute_pct: float | None
    communication_us: float
    memory_us: float
    other_us: float
    overlap_pct: float | None  # None when no communication kernel ran
    kernels: int


def hta_interval(ts: float, dur: float, *, fractional: bool) -> tuple[float, float]:
    """An event's start and end as HTA keeps them.

    HTA rounds nanosecond-resolution timestamps (a trace whose ``ts`` are fractional) to
    whole microseconds inwards: the start up, the end down. Integer timestamps are kept.
    """
    if fractional:
        return float(math.ceil(ts)), float(math.floor(ts + dur))
    return ts, ts + dur


Record = tuple[float, ...]


def sweep(  # noqa: PLR0915 (one loop, run once per GPU event: no call it could save)
    records: Iterable[Record],
    last_step: float | None,
    fold: KernelFold,
    operators: OperatorCounter | None = None,
) -> tuple[GpuTime, KernelStats] | None:
    """The breakdown of ``(start, end, key, code, ...)`` records sorted by start, in one
    pass; each record counted is also given to ``fold`` (``kernel_stats``).

    A record counts when its ``key`` (the start of its launch, or its own) is before
    ``last_step``. HTA's merge of the kept intervals (sorted by start, an interval joins
    the group before it unless it starts after every end so far) gives the span and the
    busy time; the time each set of kinds runs together comes from each kind's reach (the
    latest end of its intervals so far): between two successive starts, kind ``k`` runs
    exactly from the first start to its reach, since every interval of it begun so far
    started at or before the first. So nothing but a few numbers is kept, whatever the
    count. None when no record counts (a CPU-only trace).
    """
    everything = last_step is None
    limit = math.inf if last_step is None else last_step
    by_mask = [0.0] * (1 << KINDS)
    # each kind's reach, in locals; comparisons, not min() and max() calls, which cost
    # more than the rest of the step (this loop runs once per GPU event; ruff's PLR1730
    # would turn an if statement back into a call, a conditional expression it leaves)
    comm = memory = compute = other = -math.inf
    count = 0
    first = now = group_start = group_end = reach_all = busy = 0.0
    add = fold.add
    count_gpu = operators.gpu if operators is not None else None
    for start, end, key, flags, name, stream, call in records:
        code = int(flags)  # records read back from a spill are floats
        if count_gpu is not None and stream > 0:
            count_gpu(key, code, int(name), end - start)
        if not (key < limit or everything):
            continue
        add(start, end, key, code, int(name), int(stream), call)
        kind = code & 3
        if count == 0:
            first = now = group_start = start
            group_end = reach_all = end
        else:
            if start > reach_all:  # a new group of HTA's merge
                busy += group_end - group_start
                group_start, group_end = start, end
            elif end > group_end:
                group_end = end
            while now < start:  # the kinds running from now to start, as they end
                if reach_all <= now:  # none: idle until start (the span's rest, not a kind's)
                    now = start
                    break
                mask, upto = 0, start
                if comm > now:
                    mask = 1
                    upto = comm if comm < upto else upto
                if memory > now:
                    mask |= 2
                    upto = memory if memory < upto else upto
                if compute > now:
                    mask |= 4
                    upto = compute if compute < upto else upto
                if other > now:
                    mask |= 8
                    upto = other if other < upto else upto
                by_mask[mask] += upto - now
                now = upto
            reach_all = end if end > reach_all else reach_all
        count += 1
        if kind == COMPUTATION:
            compute = end if end > compute else compute
        elif kind == COMMUNICATION:
            comm = end if end > comm else comm
        elif kind == MEMORY:
            memory = end if end > memory else memory
        elif end > other:
            other = end
    if count == 0:
        return None
    _run_kinds([comm, memory, compute, other], by_mask, now)
    busy += group_end - group_start
    return _breakdown(by_mask, group_end - first, busy, count), fold.result(by_mask)


def _run_kinds(reach: list[float], by_mask: list[float], now: float) -> None:
    """Add the time from ``now`` until every kind has ended to the kinds running."""
    while True:
        running = [(end, 1 << kind) for kind, end in enumerate(reach) if end > now]
        if not running:
            return
        upto = min(end for end, _ in running)
        by_mask[sum(bit for _, bit in running)] += upto - now
        now = upto


def as_us(time: float) -> float:
    """``time`` to the nanosecond; a float past 64 bits, which JSON as kept cannot hold
    as an integer (the rank's figures then carry a problem saying so)."""
    rounded = round(time, 3)
    return float(rounded) if type(rounded) is int and abs(rounded) >= 2**63 else rounded


def _share(part: float, whole: float) -> float | None:
    return round(100 * part / whole, 2) if whole > 0 else None


def _breakdown(by_mask: list[float], span: float, busy: float, count: int) -> GpuTime:
    def during(include: int, exclude: int = 0) -> float:
        return sum(
            t
            for mask, t in enumerate(by_mask)
            if mask and mask & include == include and not mask & exclude
        )

    computation, communication = 1 << COMPUTATION, 1 << COMMUNICATION
    compute = during(computation)
    idle = span - busy
    non_compute = span - compute - idle
    return GpuTime(
        kernel_us=as_us(span),
        idle_us=as_us(idle),
        compute_us=as_us(compute),
        non_compute_us=as_us(non_compute),
        idle_pct=_share(idle, span),
        compute_pct=_share(compute, span),
        non_compute_pct=_share(non_compute, span),
        communication_us=as_us(during(communication, computation)),
        memory_us=as_us(during(1 << MEMORY, computation | communication)),
        other_us=as_us(during(1 << OTHER, computation | communication | 1 << MEMORY)),
        overlap_pct=_share(during(communication | computation), during(communication)),
        kernels=count,
    )
