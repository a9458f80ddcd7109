"""What inspection records for each trace: one ``FileFinding`` per trace file or member."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

#: The values of ``FileFinding.format``.
FORMATS: Final = ("kineto-json", "kineto-json-gzip", "chakra-host-et", "et", "nsys-rep", "unknown")
#: The values of ``FileFinding.rank_source``.
RANK_SOURCES: Final = ("header", "tail", "file name")


@dataclass(frozen=True, slots=True)
class FileFinding:
    """One trace: what it is, which rank of which world it claims, and what went wrong.

    ``rank_source`` says where the rank came from: ``header`` (``distributedInfo``
    before ``traceEvents``), ``tail`` (after it) or ``file name``. ``problem`` says in
    plain words why the trace could not be read, or why it has no rank, or what is
    wrong with what it claims. ``readable`` is False when its bytes could not be read
    through (not a trace, corrupt, cut short, refused); such traces are the
    ``unreadable`` of the summary.
    """

    file: str
    member: str | None
    format: str
    size: int
    rank: int | None = None
    world_size: int | None = None
    backend: str | None = None
    rank_source: str | None = None
    problem: str | None = None
    readable: bool = True

    @property
    def label(self) -> str:
        """``file``, or ``file!member`` for a trace inside an archive."""
        return self.file if self.member is None else f"{self.file}!{self.member}"
