"""One rank's kernels by type and name, its idle time by cause, its launches: HTA's
``get_gpu_kernel_breakdown``, ``get_idle_time_breakdown`` and
``get_cuda_kernel_launch_stats`` (version 0.5), folded in during ``gpu.sweep``'s pass.

Each GPU event HTA keeps reaches ``KernelFold.add`` once, in start order, with its
kernel name's number (``kernels.GpuEvents`` numbers the first ``MAX_NAMES`` distinct
names of a rank, each shown in at most ``MAX_NAME_CHARS`` characters; the events of
later names count in ``other`` only), its stream, and its launch's start and duration.
Memory is per name, per stream and three ``Distribution``s, whatever the count of events.

- Kernel types: the time each set of types (computation, communication, memory) runs
  together, named as HTA names them (``COMPUTATION overlapping COMMUNICATION``), from
  the sweep's time per set of kinds, and each as a percentage of their sum.
- Top kernels: per name of those three types, count, sum, mean, min, max and sample
  standard deviation of the durations; the ``TOP`` largest sums, then ``other``: every
  other kernel's durations together.
- Idle time, per stream, of HTA's kernel categories only: the gap before each kernel
  (after the previous one's end on that stream) is host wait when the kernel was
  launched after that end, else kernel wait when under ``KERNEL_WAIT_US``, else other.
- Launches: each GPU event launched by one of HTA's launch calls (``LAUNCHES``), with
  the call's duration, the event's, and the delay from the call's end to the event's
  start (0 when negative); the short kernels (call of at most ``RUNTIME_CUTOFF_US``,
  event shorter than its call) and the long delays (over ``LAUNCH_DELAY_CUTOFF_US``).
"""

from __future__ import annotations

import math
import operator
from array import array
from dataclasses import dataclass
from typing import Final

from tracesets.analysis.distribution import Distribution
from tracesets.analysis.gpu import OTHER as OTHER_KIND  # no type: not among top kernels
from tracesets.analysis.gpu import as_us

#: HTA's CPU calls whose GPU events the launch statistics pair (``include_memory_events``).
LAUNCHES: Final = frozenset((
    "cudaLaunchKernel", "cudaLaunchKernelExC", "cudaMemcpyAsync", "cudaMemsetAsync",
    "runFunction - job_prep_and_submit_for_execution",
))  # fmt: skip
#: The event categories HTA's idle time breakdown looks at.
KERNEL_CATEGORIES: Final = frozenset((
    "kernel", "Kernel", "gpu_memset", "Memset", "gpu_memcpy", "Memcpy", "mtia_ccp_events",
))  # fmt: skip
KERNEL_WAIT_US: Final = 30.0
RUNTIME_CUTOFF_US: Final = 50.0
LAUNCH_DELAY_CUTOFF_US: Final = 100.0
#: Distinct kernel names with figures of their own, per rank.
MAX_NAMES: Final = 4_096
#: Names shown, before ``other``.
TOP: Final = 20
#: A kernel name's characters kept: C++ templates make names of 2,000 (real traces') and
#: more, and each rank stores ``TOP`` of them. A longer name keeps its first
#: ``MAX_NAME_CHARS - 1`` and "…"; names are told apart whole, so two alike that far
#: stay two rows.
MAX_NAME_CHARS: Final = 4_096
#: Streams with an idle breakdown of their own, per rank (the busiest idle first).
MAX_STREAMS: Final = 16
#: The streams followed per rank; a stream past them is left out of the idle breakdown.
TRACKED_STREAMS: Final = 1_024
OTHER_NAME: Final = "other"
#: Durations held before they are folded in: 8 bytes each.
BATCH: Final = 2_048

#: HTA's ``kernel_type_to_analysis`` order and names, by ``gpu``'s kind numbers.
_TYPES: Final = ((2, "COMPUTATION"), (0, "COMMUNICATION"), (1, "MEMORY"))
TYPE_NAMES: Final = {kind: name for kind, name in _TYPES}
#: A code's bits above the kind (``gpu.KINDS`` fit in 2 bits).
IN_KERNEL_CATEGORY: Final = 4
LAUNCHED: Final = 8


@dataclass(frozen=True, slots=True)
class KernelType:
    type: str
    sum_us: float
    pct: float


@dataclass(frozen=True, slots=True)
class KernelRow:
    name: str
    type: str
    count: int
    sum_us: float
    mean_us: float
    min_us: float
    max_us: float
    stddev_us: float


@dataclass(frozen=True, slots=True)
class StreamIdle:
    stream: int
    host_wait_us: float
    kernel_wait_us: float
    other_us: float

    def shares(self) -> tuple[float, float, float] | None:
        """Each cause's share of the stream's idle time as HTA's ``idle_time_ratio``, in %
        (two decimals); None when that time is not positive, where a share means nothing.
        Made from the µs kept, so figures handed between processes by a release without
        the shares (``stored``) have them too."""
        parts = (self.host_wait_us, self.kernel_wait_us, self.other_us)
        total = sum(parts)
        if total <= 0:
            return None
        host, kernel, other = (round(100 * part / total, 2) for part in parts)
        return host, kernel, other


@dataclass(frozen=True, slots=True)
class LaunchStats:
    launches: int
    cpu_median_us: float | None
    cpu_p95_us: float | None
    gpu_median_us: float | None
    gpu_p95_us: float | None
    delay_median_us: float | None
    delay_p95_us: float | None
    short_kernels: int
    long_delays: int
    long_runtimes: int


@dataclass(frozen=True, slots=True)
class KernelStats:
    types: list[KernelType]
    top: list[KernelRow]
    idle: list[StreamIdle]
    launches: LaunchStats


class _Moments:
    """Count, sum, min, max and the squares about the first value (a shift that keeps
    the variance exact in floats whatever the durations' size)."""

    __slots__ = ("count", "high", "kind", "low", "shift", "shifted", "squares", "total")

    def __init__(self, kind: int) -> None:
        self.count = 0
        self.total = self.shifted = self.squares = 0.0
        self.low, self.high, self.shift = math.inf, -math.inf, math.nan
        self.kind = kind

    def add_all(self, values: array[float]) -> None:
        """A batch of durations, summed in C (``sum``, ``min``, ``map``), not one call each."""
        if not values:
            return
        if self.count == 0:
            self.shift = values[0]
        self.count += len(values)
        self.total += sum(values)
        shifted = array("d", map(self.shift.__rsub__, values))
        self.shifted += sum(shifted)
        self.squares += sum(map(operator.mul, shifted, shifted))
        low, high = min(values), max(values)
        self.low = low if low < self.low else self.low
        self.high = high if high > self.high else self.high

    def merge(self, other: _Moments) -> None:
        """Fold ``other`` in (Chan's pairwise update, through each one's mean)."""
        if other.count == 0:
            return
        if self.count == 0:
            for slot in _Moments.__slots__:
                setattr(self, slot, getattr(other, slot))
            return
        n, m = self.count, other.count
        delta = other.mean - self.mean
        m2 = self.m2 + other.m2 + delta * delta * n * m / (n + m)
        self.count, self.total = n + m, self.total + other.total
        self.low, self.high = min(self.low, other.low), max(self.high, other.high)
        self.shift, self.shifted, self.squares = self.mean, 0.0, m2

    def restore(self, figures: tuple[int, float, float, float, float, float, float]) -> None:
        """The figures as the compiled pass folded them (``native/sweep.c``)."""
        (
            self.count,
            self.total,
            self.shifted,
            self.squares,
            self.low,
            self.high,
            self.shift,
        ) = figures

    @property
    def mean(self) -> float:
        return self.total / self.count

    @property
    def m2(self) -> float:
        return max(self.squares - self.shifted * self.shifted / self.count, 0.0)

    def row(self, name: str, kind: str) -> KernelRow:
        std = math.sqrt(self.m2 / (self.count - 1)) if self.count > 1 else 0.0
        return KernelRow(
            name,
            kind,
            self.count,
            as_us(self.total),
            as_us(self.mean),
            as_us(self.low),
            as_us(self.high),
            as_us(std),
        )


class _Stream:
    __slots__ = ("end", "host", "kernel", "other")

    def __init__(self) -> None:
        self.end = math.nan
        self.host = self.kernel = self.other = 0.0


class KernelFold:
    """The figures above, fed each kept GPU event once, in start order."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self.moments: list[_Moments] = []
        self.unnamed = _Moments(-1)  # kernels of names past MAX_NAMES
        self.streams: dict[int, _Stream] = {}
        self.cpu, self.gpu, self.delay = Distribution(), Distribution(), Distribution()
        self.short = self.long_delays = self.long_runtimes = 0
        # Durations waiting to be folded in, a batch at a time (``_fold``): per name (the
        # last, names past MAX_NAMES), and the launches' three figures.
        self.durations: list[array[float]] = [array("d")]
        self.calls, self.runs, self.delays = array("d"), array("d"), array("d")
        self.waiting = 0

    def name(self, name: str, kind: int) -> int:
        """The number of a kernel name, or -1 past ``MAX_NAMES``."""
        if len(self.names) >= MAX_NAMES:
            return -1
        self.names.append(name if len(name) <= MAX_NAME_CHARS else name[: MAX_NAME_CHARS - 1] + "…")
        self.moments.append(_Moments(kind))
        self.durations.insert(-1, array("d"))
        return len(self.names) - 1

    def add(
        self, start: float, end: float, key: float, code: int, name: int, stream: int, cpu: float
    ) -> None:
        """One GPU event: ``key`` its launch's start, ``cpu`` its launch's duration (NaN
        when no launch call of ``LAUNCHES`` made it)."""
        duration = end - start
        if code & 3 != OTHER_KIND:
            self.durations[name].append(duration)  # -1: the last, names past MAX_NAMES
            self.waiting += 1
            if self.waiting >= BATCH:
                self._fold()
        if code & IN_KERNEL_CATEGORY:
            self._idle(start, end, key if code & LAUNCHED else math.nan, stream)
        if not math.isnan(cpu):  #: launched by one of HTA's launch calls
            self.calls.append(cpu)
            self.runs.append(duration)
            delay = start - key - cpu
            self.delays.append(delay if delay > 0 else 0.0)
            if cpu <= RUNTIME_CUTOFF_US and duration < cpu:
                self.short += 1
            elif cpu > RUNTIME_CUTOFF_US:
                self.long_runtimes += 1
            if delay > LAUNCH_DELAY_CUTOFF_US:
                self.long_delays += 1
            if len(self.calls) >= BATCH:
                self._fold()

    def _fold(self) -> None:
        """Fold the durations waiting into the moments and distributions."""
        for moments, durations in zip([*self.moments, self.unnamed], self.durations, strict=True):
            if durations:
                moments.add_all(durations)
                del durations[:]
        for distribution, values in (
            (self.cpu, self.calls),
            (self.gpu, self.runs),
            (self.delay, self.delays),
        ):
            if values:
                distribution.add_all(values)
                del values[:]
        self.waiting = 0

    def _idle(self, start: float, end: float, launched: float, stream: int) -> None:
        state = self.streams.get(stream)
        if state is None:
            if len(self.streams) >= TRACKED_STREAMS:
                return
            state = self.streams[stream] = _Stream()
        gap = start - state.end  # NaN for a stream's first kernel: counted nowhere
        if launched > state.end:
            state.host += gap
        elif gap < KERNEL_WAIT_US:
            state.kernel += gap
        elif not math.isnan(gap):
            state.other += gap
        state.end = end

    def result(self, by_mask: list[float]) -> KernelStats:
        self._fold()
        return KernelStats(_types(by_mask), self._top(), self._idle_rows(), self._launches())

    def _top(self) -> list[KernelRow]:
        # most time first, a tie by name: HTA leaves ties in no particular order
        ranked = sorted(
            (-m.total, self.names[i], i)
            for i, m in enumerate(self.moments)
            if m.count and m.kind in TYPE_NAMES
        )
        rows = [
            self.moments[i].row(self.names[i], TYPE_NAMES[self.moments[i].kind])
            for _, _, i in ranked[:TOP]
        ]
        rest = _Moments(-1)
        for _, _, i in ranked[TOP:]:
            rest.merge(self.moments[i])
        rest.merge(self.unnamed)
        if rest.count:
            rows.append(rest.row(OTHER_NAME, OTHER_NAME.upper()))
        return rows

    def _idle_rows(self) -> list[StreamIdle]:
        rows = [
            StreamIdle(int(stream), as_us(s.host), as_us(s.kernel), as_us(s.other))
            for stream, s in self.streams.items()
        ]
        rows.sort(key=lambda r: (-(r.host_wait_us + r.kernel_wait_us + r.other_us), r.stream))
        return rows[:MAX_STREAMS]

    def _launches(self) -> LaunchStats:
        cpu, gpu, delay = self.cpu, self.gpu, self.delay
        return LaunchStats(
            launches=cpu.count,
            cpu_median_us=_quantile_us(cpu, 0.5),
            cpu_p95_us=_quantile_us(cpu, 0.95),
            gpu_median_us=_quantile_us(gpu, 0.5),
            gpu_p95_us=_quantile_us(gpu, 0.95),
            delay_median_us=_quantile_us(delay, 0.5),
            delay_p95_us=_quantile_us(delay, 0.95),
            short_kernels=self.short,
            long_delays=self.long_delays,
            long_runtimes=self.long_runtimes,
        )


def _quantile_us(values: Distribution, q: float) -> float | None:
    """A quantile to the nanosecond, as every other time: interpolating leaves float noise
    (1093.2499999999882 µs) that says nothing."""
    quantile = values.quantile(q)
    return None if quantile is None else as_us(quantile)


def _types(by_mask: list[float]) -> list[KernelType]:
    """HTA's kernel type breakdown from the time each set of ``gpu`` kinds ran."""
    sums: dict[str, float] = {}
    for mask, time in enumerate(by_mask):
        names = [name for kind, name in _TYPES if mask & (1 << kind)]
        if names and time > 0:
            label = " overlapping ".join(names)
            sums[label] = sums.get(label, 0.0) + time
    whole = sum(sums.values())
    rows = [KernelType(label, as_us(t), round(100 * t / whole, 2)) for label, t in sums.items()]
    rows.sort(key=lambda r: (-r.sum_us, r.type))
    return rows
