"""The words every part of Tracesets shares: statuses, list filters and limits, once each.

Pure (no HTTP, no database). The list route builds its query parameters from
``FILTERS``, the database reads a ``ListFilter``, the clients take ``ListFilters`` as
keywords, the command line makes an option of each filter and the page is served them
(``/static/vocabulary.js``): a filter added here reaches all of them, and a limit is
raised in one place. The seed document's own limits (rank count, metadata bytes) stay
with its rules in ``workload`` and are named here.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Final, Literal, TypedDict, get_args

from tracesets import workload

Status = Literal["pending", "ready", "promoted"]
STATUSES: Final[tuple[Status, ...]] = ("pending", "ready", "promoted")

# -- limits -------------------------------------------------------------------------------

#: The seed document's: a rank count is at most this, metadata at most this many bytes.
MAX_RANK_COUNT: Final = workload.MAX_RANK_COUNT
MAX_METADATA_BYTES: Final = workload.MAX_SERIALIZED_BYTES
#: Files one upload-url or add-files request declares (the contract's ``files``).
MAX_FILES_PER_REQUEST: Final = 10_000
#: Files one traceset holds, declared over several requests: a job of 2**17 ranks.
MAX_FILES_PER_TRACESET: Final = 131_072
#: The largest JSON request body (the contract's; 413 beyond).
MAX_BODY_BYTES: Final = 4 * 1024 * 1024
#: Tracesets a page of the list holds at most, and when not asked.
LIST_PAGE_MAX: Final = 500
LIST_PAGE_DEFAULT: Final = 50
#: Files a page of files (or of upload status) holds at most, and GET embeds.
FILES_PAGE_MAX: Final = 1_000
#: Parts a file is planned in at most, by the service and the client alike: the part size
#: grows past that (S3 allows 10,000; a thousand keeps one file's part URLs to ~700 KB).
PLANNED_PARTS_MAX: Final = 1_000
#: A stored integer filter (``global_batch_size``) is a signed 64-bit column.
MAX_STORED_INTEGER: Final = 2**63 - 1

# -- list filters ---------------------------------------------------------------------------

FilterKind = Literal["status", "text", "integer", "boolean", "decimal"]

#: A traceset's performance figures, computed once when its inspection is done (each a
#: column of its inspection, of the same name): the list filters and sorts on them.
Figure = Literal["gpu_idle_pct", "comm_overlap_pct", "step_ms"]
FIGURES: Final[tuple[Figure, ...]] = get_args(Figure)
#: The list's orders: newest first (the default), or by a figure, ascending or (``-``)
#: descending, ties in created order the same way.
Sort = Literal[
    "-created",
    "gpu_idle_pct",
    "-gpu_idle_pct",
    "comm_overlap_pct",
    "-comm_overlap_pct",
    "step_ms",
    "-step_ms",
]
SORTS: Final[tuple[Sort, ...]] = get_args(Sort)
DEFAULT_SORT: Final[Sort] = "-created"


@dataclass(frozen=True, slots=True)
class Filter:
    """One filter of the list: its query parameter (and Python keyword), what it takes and
    says, and the label a person reads."""

    name: str
    kind: FilterKind
    label: str
    description: str
    maximum: int | None = None  # integers: 1 to this
    alias: str | None = None  # a second spelling of the same filter, in the member's own
    #: decimals: the figure they bound, and how (``max``: at most, ``min``: at least)
    figure: Figure | None = None
    bound: Literal["max", "min"] | None = None


FILTERS: Final[tuple[Filter, ...]] = (
    Filter("status", "status", "Status", "pending, ready or promoted"),
    Filter(
        "rank_count", "integer", "Rank count", "Matches rankCountDerived.", maximum=MAX_RANK_COUNT
    ),
    Filter(
        "workload_family",
        "text",
        "Workload family",
        "Exact match on the string workloadMetadata.workload_family.",
    ),
    Filter(
        "workload_name",
        "text",
        "Workload name",
        "Exact match on the string workloadMetadata.workload_name.",
    ),
    Filter(
        "global_batch_size",
        "integer",
        "Global batch size",
        "Matches the integer workloadMetadata.shape.global_batch_size.",
        maximum=MAX_STORED_INTEGER,
        alias="shape.global_batch_size",
    ),
    Filter(
        "inspected_ok",
        "boolean",
        "Inspected OK",
        "true: inspected, and the traces agree with the declaration; false: inspected, and "
        "they disagree (see inspection.warnings), or inspection failed.",
    ),
    Filter(
        "ranks_consistent",
        "boolean",
        "Ranks consistent",
        "true: inspected, and the ranks agree with each other (collective counts, step "
        "times, declared parallelism); false: they do not (see inspection.warnings).",
    ),
    Filter(
        "gpu_idle_pct_max",
        "decimal",
        "GPU idle % at most",
        "The median over ranks of the GPU idle % (perRank gpu.idlePct) is at most this.",
        figure="gpu_idle_pct",
        bound="max",
    ),
    Filter(
        "gpu_idle_pct_min",
        "decimal",
        "GPU idle % at least",
        "The median over ranks of the GPU idle % (perRank gpu.idlePct) is at least this.",
        figure="gpu_idle_pct",
        bound="min",
    ),
    Filter(
        "comm_overlap_pct_min",
        "decimal",
        "Comm. overlap % at least",
        "The median over ranks of the communication overlap % (perRank gpu.overlapPct) is "
        "at least this.",
        figure="comm_overlap_pct",
        bound="min",
    ),
    Filter(
        "step_ms_max",
        "decimal",
        "Step ms at most",
        "The median over ranks of the median step time (perRank steps.medianUs), in "
        "milliseconds, is at most this.",
        figure="step_ms",
        bound="max",
    ),
    Filter(
        "has_stragglers",
        "boolean",
        "Has stragglers",
        "true: inspected, and some rank straggles (see inspection.stragglers); false: "
        "inspected, with per-rank figures, and none does.",
    ),
    Filter(
        "regressed",
        "boolean",
        "Regressed",
        "true: its inspection compared it with its baseline and found it slower or idler "
        "(see inspection.regression); false: compared, and it did not regress.",
    ),
)


class ListFilters(TypedDict, total=False):
    """The filters as keywords (``Client.list_tracesets(inspected_ok=False)``)."""

    status: Status
    rank_count: int
    workload_family: str
    workload_name: str
    global_batch_size: int
    inspected_ok: bool
    ranks_consistent: bool
    gpu_idle_pct_max: float
    gpu_idle_pct_min: float
    comm_overlap_pct_min: float
    step_ms_max: float
    has_stragglers: bool
    regressed: bool


@dataclass(frozen=True, slots=True)
class ListFilter:
    """The filters of one list request, combined with AND; None is not given."""

    status: Status | None = None
    rank_count: int | None = None
    workload_family: str | None = None
    workload_name: str | None = None
    global_batch_size: int | None = None
    inspected_ok: bool | None = None
    ranks_consistent: bool | None = None
    gpu_idle_pct_max: float | None = None
    gpu_idle_pct_min: float | None = None
    comm_overlap_pct_min: float | None = None
    step_ms_max: float | None = None
    has_stragglers: bool | None = None
    regressed: bool | None = None

    def given(self) -> dict[str, str | int | float | bool]:
        """The filters given, by name, in ``FILTERS`` order."""
        return {f.name: value for f in fields(self) if (value := getattr(self, f.name)) is not None}

    def query(self) -> dict[str, str | int | float]:
        """The query parameters that ask the list for these filters."""
        return {
            name: ("true" if value else "false") if isinstance(value, bool) else value
            for name, value in self.given().items()
        }
