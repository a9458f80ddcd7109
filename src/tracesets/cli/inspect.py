"""``tracesets inspect``: what local traces say about their ranks, before any upload.

The same reader the service runs after ``complete``, on local files: a file is never
parsed whole, and the files are shared among a process per core (``client.reading``).
``tracesets upload`` runs it too, to propose a rank count or to warn
before sending a byte when the traces disagree with the declared one.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from tracesets.cli.output import say, warn
from tracesets.cli.tables import Rows, print_rows
from tracesets.client.files import collect
from tracesets.inspection import FileFinding, Summary, summarize
from tracesets.inspection.report import result_json
from tracesets.inspection.summary import SHOWN_RANKS, gaps, runs_text

if TYPE_CHECKING:
    from rich.console import Console


def _stdout() -> Console:
    """The table is the command's result: stdout. Piped, lines run as long as they need
    (a file name is never cut); on a terminal, long names wrap within their column."""
    from rich.console import Console

    out = Console(highlight=False)
    return out if out.is_terminal else Console(highlight=False, width=100_000)


def ranks_list(numbers: Sequence[int], count: int | None = None) -> str:
    """0-7, 9, 12-15 (and how many more when the list was cut)."""
    runs: list[str] = []
    for number in numbers:
        if runs and "-" not in runs[-1] and int(runs[-1]) == number - 1:
            runs[-1] = f"{runs[-1]}-{number}"
        elif runs and "-" in runs[-1] and int(runs[-1].split("-")[1]) == number - 1:
            runs[-1] = f"{runs[-1].split('-')[0]}-{number}"
        else:
            runs.append(str(number))
    shown = ", ".join(runs) or "none"
    extra = (count or 0) - len(numbers)
    return f"{shown} (and {extra:,} more)" if extra > 0 else shown


def missing_lines(summary: Summary, declared_rank_count: int | None) -> list[str]:
    """Missing ranks against the one expected count; when the traces disagree on the world
    size and no count is declared, what is missing under each world size they give."""
    if declared_rank_count is not None or len(summary.world_sizes) == 1:
        return [f"missing ranks: {ranks_list(summary.missing_ranks, summary.missing_rank_count)}"]
    if not summary.world_sizes:
        return ["missing ranks: unknown (no trace gives the world size, and no count is declared)"]
    lines = ["missing ranks: unknown, the traces disagree on the world size; if it is"]
    for size in summary.world_sizes:
        missing = gaps(size, summary.ranks_found)
        lines.append(f"  {size:,}: {runs_text(missing) if missing else 'none'}")
    return lines


def duplicated(ranks: Sequence[int], of_files: Iterable[int | None]) -> str:
    """``rank 0 (3 files), rank 5 (2 files)``, or ``none``: never a bare number.

    ``of_files`` is the rank of each file (None when it gives none)."""
    if not ranks:
        return "none"
    counts = Counter(rank for rank in of_files if rank is not None)
    shown = [f"rank {rank:,} ({counts[rank]:,} files)" for rank in ranks[:SHOWN_RANKS]]
    more = len(ranks) - len(shown)
    return ", ".join(shown) + (f" and {more:,} more ranks" if more > 0 else "")


def print_report(
    findings: Sequence[FileFinding], summary: Summary, declared_rank_count: int | None = None
) -> None:
    ordered = sorted(findings, key=lambda f: (f.rank is None, f.rank or 0, f.label))
    rows = [
        [
            f.label,
            f.format,
            "" if f.rank is None else str(f.rank),
            "" if f.world_size is None else str(f.world_size),
            f.backend or "",
            f.rank_source or "",
            f.problem or "",
        ]
        for f in ordered
    ]
    headings = ["file", "format", "rank", "world size", "backend", "rank from", "problem"]
    # the file column wraps within itself, never cut with "…"
    print_rows(_stdout(), Rows(headings, rows, fold_first=True), markup=False)
    sizes = summary.world_sizes
    say(f"ranks found: {ranks_list(summary.ranks_found)}")
    say(f"world size: {', '.join(map(str, sizes)) if sizes else 'unknown'}")
    for line in missing_lines(summary, declared_rank_count):
        say(line)
    say(f"duplicated ranks: {duplicated(summary.duplicate_ranks, (f.rank for f in findings))}")
    for warning in summary.warnings:
        warn(f"warning: {warning}")


def inspect(
    paths: Annotated[
        list[Path],
        typer.Argument(
            metavar="PATH...",
            exists=True,
            help="Trace files, archives or folders.",
            show_default=False,
        ),
    ],
    rank_count: Annotated[
        int | None,
        typer.Option(
            "--rank-count", min=1, help="Compare with this declared rank count.", show_default=False
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
    kernels: Annotated[
        bool,
        typer.Option("--kernels", help="Also print each rank's top kernels (HTA's breakdown)."),
    ] = False,
    jobs: Annotated[
        int | None,
        typer.Option(
            "--jobs",
            min=1,
            help="Processes reading the traces at once (default: one per core; one per "
            "32 files at most).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Print what each trace says about its rank and its per-rank figures, what ranks are
    missing, and where ranks disagree; upload nothing."""
    from tracesets.analysis.report import analyse_traceset
    from tracesets.cli.figures import figure_rows, idle_rows, json_members, kernel_rows
    from tracesets.client.reading import read_files

    files = collect(paths, ())
    reading = read_files(files, figures=True, workers=jobs)
    findings = reading.findings
    summary = summarize(findings, declared_rank_count=rank_count)
    world_size = summary.world_size or rank_count
    analysis = analyse_traceset(findings, reading.traces, world_size=world_size)
    summary = replace(summary, warnings=[*summary.warnings, *analysis.checks.warnings])
    if as_json:
        say(result_json(summary, findings, json_members(analysis), indent=True).decode())
        return
    print_report(findings, summary, rank_count)
    if analysis.ranks:
        print_rows(_stdout(), figure_rows(analysis))
        if any(figures["idleBreakdown"] for figures in analysis.ranks):
            print_rows(_stdout(), idle_rows(analysis))
        if kernels:
            print_rows(_stdout(), kernel_rows(analysis), markup=False)
