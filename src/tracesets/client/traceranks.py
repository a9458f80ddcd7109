"""The traces' own ranks against the declared rank count, read before a byte is sent.

The rank count cannot change once uploaded, so traces that contradict it (a world size
other than it, a rank not below it) refuse the upload unless the caller says to go on;
traces of only some ranks are normal and only warn. ``Client``, ``AsyncClient`` and
``tracesets upload`` all plan an upload through ``UploadPlan.checked``, which applies
this check, so none of them uploads what another refuses, and they refuse in the same
words (each naming its own way to declare the count and to go on anyway).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from tracesets.client.errors import ClientError

if TYPE_CHECKING:
    from tracesets.client.files import LocalFile
    from tracesets.inspection import FileFinding, Summary

#: How a Python caller declares the rank count and uploads contradicting traces anyway.
DECLARE_IN_PYTHON = "workloadMetadata shape.rankCount, or the parallelism degrees"
OVERRIDE_IN_PYTHON = "ignore_trace_ranks=True"


def read_findings(files: Sequence[LocalFile]) -> list[FileFinding]:
    """What the primary files among ``files`` say of their ranks: headers (and tails)
    only, never the figures' pass over every event."""
    from tracesets.client.reading import read_files  # the readers, only when reading

    return read_files(files, figures=False).findings


def summarized(findings: Sequence[FileFinding], declared: int | None) -> Summary:
    from tracesets.inspection import summarize

    return summarize(list(findings), declared_rank_count=declared)


def contradicts(found: Summary, declared: int) -> bool:
    """A world size other than the declared rank count, or a rank not below it."""
    return any(size != declared for size in found.world_sizes) or any(
        rank >= declared for rank in found.ranks_found
    )


class RankCountContradicted(ClientError):
    """The traces contradict the declared rank count: nothing was sent."""

    def __init__(self, found: Summary, declared: int) -> None:
        self.found = found
        self.declared = declared
        lines = self.lines(declare_with=DECLARE_IN_PYTHON, override=OVERRIDE_IN_PYTHON)
        super().__init__("\n".join(lines), title="Traces contradict the rank count", sent=False)

    def lines(self, *, declare_with: str, override: str) -> list[str]:
        """The refusal, each disagreement on a line of its own; ``declare_with`` and
        ``override`` name the caller's way to declare the count and to go on anyway."""
        declared, found = self.declared, self.found
        ranks = f"{declared:,} rank{'' if declared == 1 else 's'}"
        held = (
            f"{found.world_size:,} ranks, as the traces hold"
            if found.world_size is not None
            else "the rank count the traces hold"
        )
        return [
            f"the traces contradict the declared rank count ({ranks}); nothing was sent:",
            *(f"  {warning}" for warning in found.warnings),
            f"Declare {held} ({declare_with}): it cannot change after upload. "
            f"Or pass {override} to upload anyway.",
        ]


def check(
    files: Sequence[LocalFile],
    declared: int,
    *,
    ignore: bool,
    findings: Sequence[FileFinding] | None = None,
) -> list[str]:
    """The disagreements of the traces among ``files`` with the ``declared`` rank count,
    one sentence each; RankCountContradicted if they contradict it, unless ``ignore``.
    ``findings``: the files' findings when the caller has read them already."""
    read = read_findings(files) if findings is None else findings
    if not read:
        return []
    found = summarized(read, declared)
    if not ignore and contradicts(found, declared):
        raise RankCountContradicted(found, declared)
    return found.warnings
