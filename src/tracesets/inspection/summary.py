"""What a traceset's traces say together, against the rank count its metadata declares.

The declared rank count is a claim; the traces carry their own. ``summarize`` lists the
ranks found, the world sizes the traces give, the ranks with no trace and those with
several, the files it could not read, and one readable sentence for each disagreement.
Traces of only some ranks are normal (many jobs profile rank 0 alone), so nothing here
refuses anything: it informs.

Missing ranks are the ranks 0 to N-1 with no trace, where N is the declared rank count,
or, when none is declared, the world size the traces agree on.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Final

from tracesets.inspection.findings import FileFinding

#: ``missing_ranks`` lists at most this many ranks; ``missing_rank_count`` counts them all
#: (a declared count may be two billion).
MAX_LISTED_RANKS: Final = 65_536
#: A sentence names at most this many ranks or rank ranges.
SHOWN_RANKS: Final = 20
#: At most this many files get a sentence of their own per kind of warning.
NAMED_FILES: Final = 10


@dataclass(frozen=True, slots=True)
class Summary:
    """The traceset's traces together; ``warnings`` says each disagreement in a sentence."""

    ranks_found: list[int]
    world_sizes: list[int]
    world_size: int | None  # the one world size when all traces that give one agree
    missing_ranks: list[int]
    duplicate_ranks: list[int]
    unreadable: list[str]  # "file", or "file!member" inside an archive
    warnings: list[str]
    missing_rank_count: int = field(default=0)


Runs = list[tuple[int, int]]


def runs_of(ranks: Iterable[int]) -> Runs:
    """Sorted ranks as runs of consecutive ones: ``[0, 1, 2, 5]`` is ``[(0, 2), (5, 5)]``."""
    runs: Runs = []
    for rank in ranks:
        if runs and rank == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], rank)
        else:
            runs.append((rank, rank))
    return runs


def gaps(expected: int, found: Iterable[int]) -> Runs:
    """The runs of ranks 0 to ``expected`` - 1 that are not in ``found``; as long as ``found``."""
    runs: Runs = []
    start = 0
    for rank in sorted(set(found)):
        if rank >= expected:
            break
        if rank > start:
            runs.append((start, rank - 1))
        start = rank + 1
    if start < expected:
        runs.append((start, expected - 1))
    return runs


def runs_text(runs: Runs) -> str:
    """``0-7, 9, 12-15``: the first few runs, then how many ranks more."""
    shown = [f"{a:,}" if a == b else f"{a:,}-{b:,}" for a, b in runs[:SHOWN_RANKS]]
    more = sum(b - a + 1 for a, b in runs[SHOWN_RANKS:])
    return ", ".join(shown) + (f" and {more:,} more" if more else "")


def ranks_text(ranks: Iterable[int]) -> str:
    return runs_text(runs_of(ranks))


def _traces(count: int) -> str:
    return "1 trace" if count == 1 else f"{count:,} traces"


def _listed(runs: Runs) -> list[int]:
    listed: list[int] = []
    for a, b in runs:
        listed.extend(range(a, min(b + 1, a + MAX_LISTED_RANKS - len(listed))))
        if len(listed) >= MAX_LISTED_RANKS:
            break
    return listed


def _per_file(findings: Iterable[FileFinding], sentence: str, rest: str) -> list[str]:
    """One sentence per file (``{label}``, ``{problem}``), then one for the rest."""
    listed = list(findings)
    said = [
        sentence.format(label=f.label, problem=f.problem or "no reason given")
        for f in listed[:NAMED_FILES]
    ]
    if len(listed) > NAMED_FILES:
        said.append(rest.format(count=len(listed) - NAMED_FILES))
    return said


def _world_size_warnings(sizes: Counter[int], declared: int | None) -> list[str]:
    said = []
    for size in sorted(sizes):
        if declared is not None and size != declared:
            says = "says" if sizes[size] == 1 else "say"
            said.append(
                f"{_traces(sizes[size])} {says} the world size is {size:,}, but the "
                f"workload metadata declares {declared:,} rank{'' if declared == 1 else 's'}."
            )
    if len(sizes) > 1:
        each = ", ".join(f"{size:,} ({_traces(sizes[size])})" for size in sorted(sizes))
        said.append(f"The traces disagree on the world size: {each}.")
    return said


def _rank_warnings(
    by_rank: dict[int, list[str]], expected: int, missing: Runs, *, declared: bool
) -> list[str]:
    said = []
    beyond = [rank for rank in sorted(by_rank) if rank >= expected]
    if beyond:
        what = (
            f"the {expected:,} declared ranks"
            if declared
            else f"the world size of {expected:,} the traces give"
        )
        are = "is" if len(beyond) == 1 else "are"
        said.append(
            f"{len(beyond):,} of the ranks found {are} not below {what}: {ranks_text(beyond)}."
        )
    count = sum(b - a + 1 for a, b in missing)
    if count:
        of = (
            f"{expected:,} declared ranks"
            if declared
            else f"the {expected:,} ranks of the traces' world size"
        )
        have = "has" if count == 1 else "have"
        said.append(f"{count:,} of {of} {have} no trace: {runs_text(missing)}.")
    return said


def _duplicate_warnings(by_rank: dict[int, list[str]], duplicates: list[int]) -> list[str]:
    said = []
    for rank in duplicates[:NAMED_FILES]:
        labels = by_rank[rank]
        named = ", ".join(labels[:NAMED_FILES])
        more = f" and {len(labels) - NAMED_FILES:,} more" if len(labels) > NAMED_FILES else ""
        said.append(f"Rank {rank:,} has {len(labels):,} traces: {named}{more}.")
    if len(duplicates) > NAMED_FILES:
        said.append(f"{len(duplicates) - NAMED_FILES:,} more ranks have more than one trace.")
    return said


def _file_warnings(findings: list[FileFinding]) -> list[str]:
    return [
        *_per_file(
            (f for f in findings if not f.readable),
            "{label} could not be read: {problem}.",
            "{count:,} more files could not be read.",
        ),
        *_per_file(
            (f for f in findings if f.readable and f.rank is None),
            "{label} does not say its rank: {problem}.",
            "{count:,} more traces do not say their rank.",
        ),
        *_per_file(
            (f for f in findings if f.readable and f.rank is not None and f.problem),
            "{label}: {problem}.",
            "{count:,} more traces have problems.",
        ),
    ]


def summarize(findings: list[FileFinding], *, declared_rank_count: int | None) -> Summary:
    """The traceset's view of its findings, and every disagreement as a sentence."""
    by_rank: defaultdict[int, list[str]] = defaultdict(list)
    for finding in findings:
        if finding.rank is not None:
            by_rank[finding.rank].append(finding.label)
    sizes = Counter(f.world_size for f in findings if f.world_size is not None)
    world_size = next(iter(sizes)) if len(sizes) == 1 else None
    expected = declared_rank_count if declared_rank_count is not None else world_size
    missing = gaps(expected, by_rank) if expected else []
    duplicates = sorted(rank for rank, labels in by_rank.items() if len(labels) > 1)

    warnings = ["No traces were found in the traceset's files."] if not findings else []
    warnings += _world_size_warnings(sizes, declared_rank_count)
    if expected:
        declared = declared_rank_count is not None
        warnings += _rank_warnings(by_rank, expected, missing, declared=declared)
    warnings += _duplicate_warnings(by_rank, duplicates)
    warnings += _file_warnings(findings)
    return Summary(
        ranks_found=sorted(by_rank),
        world_sizes=sorted(sizes),
        world_size=world_size,
        missing_ranks=_listed(missing),
        duplicate_ranks=duplicates,
        unreadable=[f.label for f in findings if not f.readable],
        warnings=warnings,
        missing_rank_count=sum(b - a + 1 for a, b in missing),
    )
