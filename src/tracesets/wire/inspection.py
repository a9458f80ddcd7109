"""The shapes of an inspection: what the traces say, per file and per rank."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, BeforeValidator, Field

from tracesets.jsontext import JsonNumber


def _figure(value: object) -> object:
    """The client reads answers exactly (``jsontext``): a measured figure is a float here."""
    return float(value.text) if isinstance(value, JsonNumber) else value


#: A measurement (µs, a percentage), sent as a JSON number with a fraction.
Figure = Annotated[float, BeforeValidator(_figure)]


class InspectedFile(BaseModel):
    file: str = Field(description="The traceset's file.")
    member: str | None = Field(description="The archive member holding this trace, if any.")
    format: str = Field(
        description="kineto-json, kineto-json-gzip, chakra-host-et, et, nsys-rep or unknown."
    )
    size: int
    rank: int | None
    worldSize: int | None
    backend: str | None
    rankSource: Literal["header", "tail", "file name"] | None
    problem: str | None = Field(description="Why the trace could not be read, or has no rank.")


class RankSteps(BaseModel):
    count: int = Field(description="How many ProfilerStep#N the trace holds.")
    minUs: Figure | None
    medianUs: Figure | None
    maxUs: Figure | None


class RankGpuTime(BaseModel):
    """GPU time with Holistic Trace Analysis's definitions (docs/contract-notes.md)."""

    kernelUs: Figure = Field(description="From the first GPU event's start to the last one's end.")
    idleUs: Figure
    computeUs: Figure
    nonComputeUs: Figure = Field(description="Communication, memory and other GPU time.")
    idlePct: Figure | None = Field(description="Of kernelUs, two decimals.")
    computePct: Figure | None
    nonComputePct: Figure | None
    communicationUs: Figure = Field(description="Communication while no computation runs.")
    memoryUs: Figure = Field(
        description="Copies and sets while no computation or communication runs."
    )
    otherUs: Figure
    overlapPct: Figure | None = Field(
        description="Share of communication time overlapped by computation; null without any."
    )
    kernels: int


class KernelTypeTime(BaseModel):
    type: str = Field(
        description="COMPUTATION, COMMUNICATION, MEMORY, or a set running together as HTA "
        "names it (COMPUTATION overlapping COMMUNICATION)."
    )
    sumUs: Figure
    pct: Figure = Field(description="Of all kernel types' time, two decimals.")


class TopKernel(BaseModel):
    name: str = Field(description="The kernel's name, or other: every kernel not listed.")
    type: str = Field(description="COMPUTATION, COMMUNICATION or MEMORY; OTHER for other.")
    count: int
    sumUs: Figure
    meanUs: Figure
    minUs: Figure
    maxUs: Figure
    stddevUs: Figure = Field(description="Sample standard deviation; 0 for one kernel.")


class StreamIdle(BaseModel):
    stream: int
    hostWaitUs: Figure = Field(description="Gaps before a kernel launched after the last ended.")
    kernelWaitUs: Figure = Field(description="Other gaps under 30 µs.")
    otherUs: Figure
    hostWaitPct: Figure | None = Field(
        default=None,
        description="Host wait's share of the stream's idle time (HTA's idle_time_ratio, "
        "in %, two decimals); null when that idle time is not positive. Absent from "
        "figures stored before 2026-12-05, as are the next two.",
    )
    kernelWaitPct: Figure | None = Field(default=None)
    otherPct: Figure | None = Field(default=None)


class LaunchStats(BaseModel):
    """GPU events paired with the launch call that made them (cudaLaunchKernel,
    cudaLaunchKernelExC, cudaMemcpyAsync, cudaMemsetAsync, MTIA's runFunction). Medians and
    95th percentiles are exact up to 32,768 launches; past that, within 0.125 µs below
    4.096 ms and 0.05 % above."""

    launches: int
    cpuMedianUs: Figure | None = Field(description="The launch call's duration.")
    cpuP95Us: Figure | None
    gpuMedianUs: Figure | None = Field(description="The GPU event's duration.")
    gpuP95Us: Figure | None
    delayMedianUs: Figure | None = Field(
        description="From the call's end to the event's start, 0 when negative."
    )
    delayP95Us: Figure | None
    shortKernels: int = Field(description="Calls of at most 50 µs whose event is shorter.")
    longDelays: int = Field(description="Launch delays over 100 µs.")
    longRuntimes: int = Field(description="Calls over 50 µs.")


class CollectiveCount(BaseModel):
    count: int
    bytes: int | None = Field(description="Input bytes in all; null when no call recorded them.")


class GroupCollectives(BaseModel):
    group: str = Field(description="The process group's name (pg_name), or unknown.")
    description: str | None
    ranks: list[int] | None
    ops: dict[str, CollectiveCount] = Field(description="By collective, e.g. allreduce.")


class RankFigures(BaseModel):
    """What one trace's events say, read once through after `complete`."""

    rank: int | None
    file: str
    member: str | None
    events: int
    steps: RankSteps
    gpu: RankGpuTime | None = Field(description="null for a trace without GPU events.")
    kernelTypes: list[KernelTypeTime] = Field(
        default_factory=list, description="GPU time by kernel type, largest first."
    )
    topKernels: list[TopKernel] = Field(
        default_factory=list,
        description="The 20 kernels of most time, then other (at most 21 rows). A rank's "
        "first 4,096 kernel names have figures of their own; later ones count in other. A "
        "name longer than 4,096 characters keeps its first 4,095 and an ellipsis.",
    )
    idleBreakdown: list[StreamIdle] = Field(
        default_factory=list,
        description="Idle time by cause on the 16 streams idle longest (HTA's kernel "
        "categories only).",
    )
    launchStats: LaunchStats | None = Field(
        default=None, description="null for a trace without GPU events."
    )
    collectives: list[GroupCollectives]
    straggler: bool
    problem: str | None = Field(description="Why the events could not all be read.")


class RankFiguresPage(BaseModel):
    items: list[RankFigures]
    nextCursor: str | None = Field(
        description="Pass as `cursor` for the next page; null on the last."
    )


class KernelSpread(BaseModel):
    """One kernel's time over the ranks listing it among their top kernels."""

    name: str
    type: str = Field(description="COMPUTATION, COMMUNICATION or MEMORY.")
    ranks: int = Field(description="How many ranks list it among their top kernels.")
    minUs: Figure = Field(description="The least of its sums over those ranks.")
    medianUs: Figure
    maxUs: Figure
    minRank: int = Field(description="The rank of minUs (the lowest on a tie).")
    maxRank: int = Field(description="The rank of maxUs (the lowest on a tie).")


class RegressionContributor(BaseModel):
    kind: Literal["kernel", "operator"]
    name: str
    diffUs: Figure


class Regression(BaseModel):
    """The comparison with the baseline made when the inspection finished."""

    baselineId: str = Field(description="The baseline compared with (it may since be deleted).")
    stepRatio: Figure | None = Field(description="Median step over the baseline's, 4 decimals.")
    gpuIdleDiffPct: Figure | None = Field(description="GPU idle % less the baseline's, points.")
    contributors: list[RegressionContributor] = Field(
        description="The (at most) three kernels or operators whose time changed most."
    )
    regressed: bool = Field(
        description="The median step is more than TRACESETS_REGRESSION_STEP_PCT % (5) slower, "
        "or GPU idle more than TRACESETS_REGRESSION_IDLE_POINTS (5) points higher; "
        'warnings then holds a sentence beginning "Regression against ".'
    )


class Inspection(BaseModel):
    """What the primary files' traces say about their ranks, read after `complete`."""

    status: Literal["pending", "done", "failed"]
    ranksFound: list[int]
    worldSize: int | None = Field(description="The world size every trace agrees on, else null.")
    worldSizes: list[int] = Field(description="Every world size found.")
    missingRanks: list[int] = Field(
        description="Ranks 0…N−1 with no trace, N being the declared rank count (else the world size)."
    )
    missingRankCount: int = Field(
        description="How many ranks are missing; missingRanks lists at most 65,536 of them."
    )
    duplicateRanks: list[int]
    unreadable: list[str]
    warnings: list[str] = Field(
        description="Every disagreement with rankCountDerived, and between ranks, in words."
    )
    files: list[InspectedFile]
    truncated: bool = Field(
        default=False,
        description="True when the lists were cut to keep the answer bounded (each keeps its "
        "first 256 KiB of JSON once the inspection passes 2 MiB); the counts stay exact.",
    )
    perRank: list[RankFigures] = Field(
        default_factory=list,
        description="Each trace's figures in rank order, the first 256; "
        "GET /api/v1/tracesets/{id}/ranks pages through all of them.",
    )
    perRankCount: int = Field(default=0, description="How many traces have figures.")
    stragglers: list[int] = Field(default_factory=list)
    desyncedGroups: list[str] = Field(
        default_factory=list,
        description="Process groups whose members issued different numbers of a collective.",
    )
    kernelSpread: list[KernelSpread] = Field(
        default_factory=list,
        description="The 20 kernels of most time summed over the ranks listing them in "
        "topKernels, each with its sum's spread over those ranks: a kernel slow on one rank "
        "stands out by its maxUs and maxRank.",
    )
    regression: Regression | None = Field(
        default=None,
        description="null unless the traceset had an inspected baseline when its "
        "inspection finished (GET …/compare/{baselineId} tells more).",
    )


class InspectionVerdict(BaseModel):
    """A list item's view of the inspection: where it stands, and whether all agrees."""

    status: Literal["pending", "done", "failed"]
    ok: bool | None = Field(
        description="true: the traces agree with the declaration; false: they disagree, or "
        "inspection failed; null while pending."
    )
