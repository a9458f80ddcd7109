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
    collectives: list[GroupCollectives]
    straggler: bool
    problem: str | None = Field(description="Why the events could not all be read.")


class RankFiguresPage(BaseModel):
    items: list[RankFigures]
    nextCursor: str | None = Field(
        description="Pass as `cursor` for the next page; null on the last."
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


class InspectionVerdict(BaseModel):
    """A list item's view of the inspection: where it stands, and whether all agrees."""

    status: Literal["pending", "done", "failed"]
    ok: bool | None = Field(
        description="true: the traces agree with the declaration; false: they disagree, or "
        "inspection failed; null while pending."
    )
