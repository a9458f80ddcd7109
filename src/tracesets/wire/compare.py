"""The shapes of a comparison of two inspected tracesets: a traceset against its baseline.

Every figure comes from what the two inspections stored; a difference is the traceset's
figure less the baseline's, so a positive ``diffUs`` is time the traceset spends more.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from tracesets.wire.inspection import Figure


class RankDiff(BaseModel):
    """The traceset's temporal breakdown less the baseline's (µs, and points of kernel time)."""

    idleUs: Figure | None
    computeUs: Figure | None
    nonComputeUs: Figure | None
    idlePct: Figure | None
    computePct: Figure | None
    nonComputePct: Figure | None


class RankBreakdown(RankDiff):
    """One side's rank: its temporal breakdown (nulls without GPU events) and median step."""

    stepMs: Figure | None


class CompareRank(BaseModel):
    rank: int
    present: Literal["both", "traceset", "baseline"] = Field(
        description="Which side has a trace of this rank."
    )
    traceset: RankBreakdown | None
    baseline: RankBreakdown | None
    diff: RankDiff | None = Field(description="null unless both sides have the rank.")
    stepRatio: Figure | None = Field(description="The traceset's median step over the baseline's.")


class Contributor(BaseModel):
    kind: Literal["kernel", "operator"]
    name: str
    diffUs: Figure


class CompareHeadline(BaseModel):
    """Medians over ranks of each rank's median step, and the inspections' aggregates."""

    stepMs: Figure | None
    baselineStepMs: Figure | None
    stepRatio: Figure | None
    gpuIdlePct: Figure | None
    baselineGpuIdlePct: Figure | None
    gpuIdleDiffPct: Figure | None
    commOverlapPct: Figure | None
    baselineCommOverlapPct: Figure | None
    commOverlapDiffPct: Figure | None
    contributors: list[Contributor] = Field(
        description="The three kernels or operators of the largest absolute difference."
    )


class CompareKernel(BaseModel):
    """A kernel of either side's top kernels, summed over ranks."""

    name: str
    type: str
    count: int
    baselineCount: int
    sumUs: Figure
    baselineSumUs: Figure
    diffUs: Figure


class CompareOperator(BaseModel):
    """An operator or kernel name's events on each side, as HTA's ``compare_traces``."""

    name: str
    baselineCount: int
    baselineTotalUs: Figure
    count: int
    totalUs: Figure
    countDiff: int
    totalUsDiff: Figure


class Comparison(BaseModel):
    """A traceset against a baseline: the headline, the first page of ranks and kernels."""

    tracesetId: str
    baselineId: str
    rankCount: int | None
    baselineRankCount: int | None
    perRankCompared: bool = Field(description="false when the rank counts differ.")
    perRankNote: str | None = Field(description="Why the per-rank rows are omitted, if they are.")
    headline: CompareHeadline
    ranks: list[CompareRank]
    ranksNextCursor: str | None
    kernels: list[CompareKernel]
    kernelsNextCursor: str | None


class CompareRankPage(BaseModel):
    items: list[CompareRank]
    nextCursor: str | None


class CompareKernelPage(BaseModel):
    items: list[CompareKernel]
    nextCursor: str | None


class CompareOperatorPage(BaseModel):
    items: list[CompareOperator]
    nextCursor: str | None
