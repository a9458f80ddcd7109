"""The shapes of a comparison of two tracesets (GET …/{id}/compare/{baselineId})."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from tracesets.wire.inspection import Figure


class Contributor(BaseModel):
    kind: Literal["kernel", "operator"]
    name: str
    diffUs: Figure = Field(description="Its time in the traceset less its time in the baseline.")


class Headline(BaseModel):
    """The medians over ranks of each side (the list's figures) and how they differ."""

    stepMs: Figure | None = Field(description="The median over ranks of the median step.")
    baselineStepMs: Figure | None
    stepRatio: Figure | None = Field(description="stepMs / baselineStepMs, four decimals.")
    gpuIdlePct: Figure | None
    baselineGpuIdlePct: Figure | None
    gpuIdleDiffPct: Figure | None = Field(description="In points, two decimals.")
    commOverlapPct: Figure | None
    baselineCommOverlapPct: Figure | None
    commOverlapDiffPct: Figure | None = Field(description="In points, two decimals.")
    contributors: list[Contributor] = Field(
        description="The (at most) three kernels or operators whose time changed most."
    )


class RankBreakdown(BaseModel):
    idleUs: Figure | None
    computeUs: Figure | None
    nonComputeUs: Figure | None
    idlePct: Figure | None
    computePct: Figure | None
    nonComputePct: Figure | None
    stepMs: Figure | None = Field(description="The rank's median step.")


class RankDifference(BaseModel):
    idleUs: Figure | None
    computeUs: Figure | None
    nonComputeUs: Figure | None
    idlePct: Figure | None = Field(description="In points.")
    computePct: Figure | None
    nonComputePct: Figure | None


class ComparedRank(BaseModel):
    rank: int
    present: Literal["both", "traceset", "baseline"]
    traceset: RankBreakdown | None
    baseline: RankBreakdown | None
    diff: RankDifference | None = Field(description="Traceset less baseline; null unless both.")
    stepRatio: Figure | None


class ComparedKernel(BaseModel):
    name: str
    type: str = Field(description="COMPUTATION, COMMUNICATION or MEMORY.")
    count: int
    baselineCount: int
    sumUs: Figure = Field(description="Summed over the ranks listing it among topKernels.")
    baselineSumUs: Figure
    diffUs: Figure


class ComparedOperator(BaseModel):
    name: str = Field(description="An operator's or kernel's name, as the traces write it.")
    baselineCount: int
    baselineTotalUs: Figure
    count: int
    totalUs: Figure
    countDiff: int
    totalUsDiff: Figure


class Comparison(BaseModel):
    tracesetId: str
    baselineId: str
    rankCount: int = Field(description="Ranks with figures in the traceset.")
    baselineRankCount: int
    perRankCompared: bool = Field(description="false when the rank counts differ.")
    perRankNote: str | None = Field(description="Why ranks is empty, when it is.")
    headline: Headline
    ranks: list[ComparedRank] = Field(description="By rank, the first 256.")
    ranksNextCursor: str | None = Field(
        description="Pass as `cursor` to GET …/compare/{baselineId}/ranks for the rest."
    )
    kernels: list[ComparedKernel] = Field(
        description="Both sides' top kernels, by absolute diffUs, the first 100."
    )
    kernelsNextCursor: str | None = Field(
        description="Pass as `cursor` to GET …/compare/{baselineId}/kernels for the rest."
    )


class ComparedRanksPage(BaseModel):
    items: list[ComparedRank]
    nextCursor: str | None


class ComparedKernelsPage(BaseModel):
    items: list[ComparedKernel]
    nextCursor: str | None


class ComparedOperatorsPage(BaseModel):
    items: list[ComparedOperator]
    nextCursor: str | None
