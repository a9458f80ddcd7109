"""What the ranks' figures say together: desyncs, stragglers, and the declared layout.

Each check yields sentences, as the rank-count checks of ``tracesets.inspection.summary``
do, and names what it found so the page can mark it:

- Within a process group, every member must have issued each collective the same number
  of times: a rank that issued fewer is what a hang or a desync leaves behind. Only the
  members whose trace was read are compared (a missing trace is said elsewhere).
- A straggler is a rank whose median step time is more than 3 scaled MADs above the
  median of all ranks' medians, and at least 5 % above it. The median and the median
  absolute deviation are not moved by the stragglers themselves (up to half the ranks
  may be slow), where a mean and a standard deviation are dragged towards a single slow
  rank until it no longer stands out; the MAD scaled by 1.4826 estimates the standard
  deviation of normally spread step times, so 3 of them is the usual 3-sigma rule. The
  5 % floor keeps ranks that agree to the microsecond (a MAD of 0) from naming noise.
  At least 3 ranks with steps are needed.
- A declared degree (``dp``, ``tp``, ``sp``, ``ep``, ``pp``) of d > 1 needs process
  groups of d ranks that, together, cover every rank traced: ``tp = 8`` on 32 ranks means
  four groups of 8. Checked only when the traces list process groups beyond the default
  one. Sizes are all a trace says of a group (its description is free text), so two
  degrees of one size cannot be told apart: tp = 2, dp = 4 passes for tp = 4, dp = 2.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Final

from tracesets.analysis.rank import UNKNOWN, RankAnalysis
from tracesets.inspection.summary import NAMED_FILES, ranks_text

#: The factor that makes a median absolute deviation estimate a standard deviation.
MAD_SCALE: Final = 1.4826
MADS: Final = 3.0
#: A straggler is also at least this much slower than the median rank.
MIN_EXCESS: Final = 0.05
MIN_RANKS_FOR_STRAGGLERS: Final = 3
DEGREES: Final = ("dp", "tp", "sp", "ep", "pp")


@dataclass(frozen=True, slots=True)
class Checks:
    """The sentences, and what they name: straggling ranks, groups whose members disagree."""

    warnings: list[str] = field(default_factory=list)
    stragglers: list[int] = field(default_factory=list)
    desynced_groups: list[str] = field(default_factory=list)


def _group_label(name: str, description: str | None, ranks: list[int]) -> str:
    described = f", {description}" if description and description != "undefined" else ""
    return f"Process group {name} ({len(ranks):,} ranks{described}: {ranks_text(ranks)})"


def _times(count: int) -> str:
    return "once" if count == 1 else f"{count:,} times"


def collective_warnings(by_rank: Mapping[int, RankAnalysis]) -> tuple[list[str], list[str]]:
    """A sentence per group and operation whose members issued different counts."""
    members: dict[str, list[int]] = {}
    descriptions: dict[str, str | None] = {}
    counts: defaultdict[str, defaultdict[str, dict[int, int]]] = defaultdict(
        lambda: defaultdict(dict)
    )
    for rank, analysis in by_rank.items():
        for group in analysis.collectives:
            if group.name == UNKNOWN or not group.ranks:
                continue
            members.setdefault(group.name, sorted(set(group.ranks)))
            descriptions.setdefault(group.name, group.description)
            for op, counted in group.ops.items():
                counts[group.name][op][rank] = counted.count
    said: list[str] = []
    desynced: list[str] = []
    for name in sorted(members, key=lambda n: (len(n), n)):
        read = [rank for rank in members[name] if rank in by_rank]
        if len(read) < 2:
            continue
        for op in sorted(counts[name]):
            issued: defaultdict[int, list[int]] = defaultdict(list)
            for rank in read:
                issued[counts[name][op].get(rank, 0)].append(rank)
            if len(issued) < 2:
                continue
            if name not in desynced:
                desynced.append(name)
            parts = [
                f"{_times(count)} by rank{'s' if len(ranks) > 1 else ''} {ranks_text(ranks)}"
                for count, ranks in sorted(issued.items(), key=lambda item: -len(item[1]))
            ]
            said.append(
                f"{_group_label(name, descriptions[name], members[name])}: its members issued "
                f"{op} different numbers of times: {'; '.join(parts)}."
            )
    if len(said) > NAMED_FILES:
        said = [*said[:NAMED_FILES], f"{len(said) - NAMED_FILES:,} more collectives disagree."]
    return said, desynced


def _ms(us: float) -> str:
    return f"{us / 1000:,.1f} ms"


def straggler_warnings(by_rank: Mapping[int, RankAnalysis]) -> tuple[list[str], list[int]]:
    medians = {
        rank: a.steps.median_us for rank, a in by_rank.items() if a.steps.median_us is not None
    }
    if len(medians) < MIN_RANKS_FOR_STRAGGLERS:
        return [], []
    middle = statistics.median(medians.values())
    mad = statistics.median(abs(m - middle) for m in medians.values())
    threshold = middle + max(MADS * MAD_SCALE * mad, MIN_EXCESS * middle)
    slow = sorted(rank for rank, m in medians.items() if m > threshold)
    said = [
        f"Rank {rank:,} straggles: its median step takes {_ms(medians[rank])}, against "
        f"{_ms(middle)} for the median rank (more than 3 MADs and 5 % above it: "
        f"{_ms(threshold)})."
        for rank in sorted(slow, key=lambda r: -medians[r])[:NAMED_FILES]
    ]
    if len(slow) > NAMED_FILES:
        said.append(f"{len(slow) - NAMED_FILES:,} more ranks straggle.")
    return said, slow


def _degree(parallelism: Mapping[str, object], name: str) -> int | None:
    value = parallelism.get(name)
    return value if type(value) is int and value > 1 else None


def parallelism_warnings(
    by_rank: Mapping[int, RankAnalysis], parallelism: Mapping[str, object], world_size: int | None
) -> list[str]:
    groups: set[tuple[int, ...]] = set()
    for analysis in by_rank.values():
        for group in analysis.collectives:
            if group.ranks:
                groups.add(tuple(sorted(set(group.ranks))))
    world = world_size or (max(by_rank) + 1 if by_rank else 0)
    everyone = set(range(world))
    if not world or not any(set(group) != everyone for group in groups):
        return []  # only the default group is listed: nothing to check the degrees with
    said = []
    sizes = sorted({len(group) for group in groups})
    for name in DEGREES:
        degree = _degree(parallelism, name)
        if degree is None or degree == world:
            continue
        of_size = [set(group) for group in groups if len(group) == degree]
        if not of_size:
            said.append(
                f"The workload metadata declares {name} = {degree:,}, but the traces have no "
                f"process group of {degree:,} ranks (their groups have "
                f"{', '.join(f'{s:,}' for s in sizes)} ranks)."
            )
            continue
        uncovered = sorted(set(by_rank) - set().union(*of_size))
        if uncovered:
            said.append(
                f"The workload metadata declares {name} = {degree:,}, but the process groups "
                f"of {degree:,} ranks leave out {len(uncovered):,} of the {len(by_rank):,} "
                f"ranks traced: {ranks_text(uncovered)}."
            )
    return said


def check_ranks(
    by_rank: Mapping[int, RankAnalysis],
    *,
    parallelism: Mapping[str, object] | None = None,
    world_size: int | None = None,
) -> Checks:
    """Every check across ranks, for the ranks whose trace was analysed."""
    collectives, desynced = collective_warnings(by_rank)
    stragglers, slow = straggler_warnings(by_rank)
    layout = parallelism_warnings(by_rank, parallelism or {}, world_size)
    return Checks([*collectives, *stragglers, *layout], slow, desynced)


def declared_parallelism(metadata: object) -> Mapping[str, object]:
    """``workloadMetadata.parallelism`` when it is an object; else nothing is declared."""
    if isinstance(metadata, dict):
        parallelism = metadata.get("parallelism")
        if isinstance(parallelism, dict):
            return parallelism
    return {}


def unique_ranks(pairs: Iterable[tuple[int | None, RankAnalysis]]) -> dict[int, RankAnalysis]:
    """Analyses by rank; a rank with several traces (said elsewhere) keeps its first."""
    by_rank: dict[int, RankAnalysis] = {}
    for rank, analysis in pairs:
        if rank is not None and rank not in by_rank:
            by_rank[rank] = analysis
    return by_rank
