"""``show``, ``list``, ``promote``, ``download``, ``delete``: one traceset or many."""

from __future__ import annotations

import re
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Final, cast

import typer

from tracesets.cli import metadata, options
from tracesets.cli.filters import with_filter_options
from tracesets.cli.inspect import duplicated, missing_lines, ranks_list
from tracesets.cli.output import REFUSED, error_lines, json_text, say, size, warn
from tracesets.cli.progress import display
from tracesets.cli.upload import summary
from tracesets.client import Client, ClientError
from tracesets.client.downloads import DownloadSummary, choose
from tracesets.inspection import Summary
from tracesets.jobs import missing_ranks, ranges
from tracesets.vocabulary import DEFAULT_SORT, LIST_PAGE_MAX, ListFilter, ListFilters, Sort

if TYPE_CHECKING:
    from tracesets.client import Traceset, TracesetFile, TracesetSummary

#: A declared rank count above this is not checked rank by rank.
MAX_RANKS_LISTED = 1 << 20
#: ``show`` lists this many files from each end of the natural order (``--files``: all).
SHOWN_FILES: Final = 5
_DIGITS: Final = re.compile(r"(\d+)")

TracesetId = Annotated[str, typer.Argument(help="The traceset's id.", show_default=False)]


def _timestamp(traceset: TracesetSummary) -> str:
    return traceset.createdAt.strftime("%Y-%m-%d %H:%M")


def show(
    traceset_id: TracesetId,
    every_file: Annotated[
        bool, typer.Option("--files", help="List every file, not the first and last few.")
    ] = False,
    as_json: options.Json = False,
    url: options.Url = None,
    token: options.Token = None,
) -> None:
    """Print a traceset: its status, counts, inspection, metadata and first and last files."""
    with options.client(url, token) as client:
        traceset = client.get_traceset(traceset_id)
        missing = _missing_ranks(client, traceset) if not as_json else None
    if as_json:
        say(json_text(traceset))
        return
    say(summary(traceset))
    if missing:
        count = traceset.rankCountDerived
        say(f"missing ranks ({len(missing)} of {count}): {ranges(missing)}")
    say(
        f"created {traceset.createdAt.isoformat()}"
        + (f", promoted {traceset.promotedAt.isoformat()}" if traceset.promotedAt else "")
    )
    if traceset.baselineId:
        say(
            f"baseline: {traceset.baselineId} (tracesets compare {traceset.id} {traceset.baselineId})"
        )
    if traceset.description:
        say(traceset.description)
    for line in file_lines(traceset.files, every=every_file):
        say(line)
    say("workloadMetadata: " + json_text(traceset.workloadMetadata))
    for line in inspection_lines(traceset):
        say(line)


def natural_key(name: str) -> tuple[tuple[int, int | str], ...]:
    """Sorts ``rank-2`` before ``rank-10``: digit runs compare as numbers (before any text)."""
    return tuple(
        (0, int(part)) if part.isdigit() else (1, part) for part in _DIGITS.split(name) if part
    )


def file_lines(files: list[TracesetFile], *, every: bool) -> list[str]:
    """The counts, then the files in natural order: all, or the first and last few.

    A job of thousands of ranks would otherwise print thousands of lines.
    """
    received = sum(1 for f in files if f.received)
    lines = [f"files: {len(files):,}, {size(sum(f.size for f in files))}, {received:,} received"]
    ordered = sorted(files, key=lambda f: natural_key(f.name))
    hidden = len(ordered) - 2 * SHOWN_FILES
    if every or hidden <= 0:
        return lines + [_file_line(f) for f in ordered]
    return [
        *lines,
        *(_file_line(f) for f in ordered[:SHOWN_FILES]),
        f"  … {hidden:,} more (--files lists every file)",
        *(_file_line(f) for f in ordered[-SHOWN_FILES:]),
    ]


def _file_line(file: TracesetFile) -> str:
    arrived = "" if file.received else "  (not received)"
    return f"  {file.role:<10} {size(file.size):>10}  {file.name}{arrived}"


def inspection_lines(traceset: Traceset) -> list[str]:
    """What the service's inspection of the traces found, as ``tracesets inspect`` says it."""
    inspection = traceset.inspection
    if inspection is None:
        return ["inspection: none (no primary files, or the upload is not complete)"]
    if inspection.status == "pending":
        return ["inspection: pending (the traces are still being read; show it again soon)"]
    sizes = inspection.worldSizes
    found = Summary(
        ranks_found=inspection.ranksFound,
        world_sizes=sizes,
        world_size=inspection.worldSize,
        missing_ranks=inspection.missingRanks,
        duplicate_ranks=inspection.duplicateRanks,
        unreadable=inspection.unreadable,
        warnings=inspection.warnings,
        missing_rank_count=inspection.missingRankCount,
    )
    lines = [
        f"inspection: {inspection.status}",
        f"  world size: {', '.join(f'{n:,}' for n in sizes) if sizes else 'unknown'}",
        f"  ranks found: {ranks_list(inspection.ranksFound)}",
        *(f"  {line}" for line in missing_lines(found, traceset.rankCountDerived)),
        "  duplicated ranks: "
        + duplicated(inspection.duplicateRanks, (f.rank for f in inspection.files)),
    ]
    lines += [f"  warning: {warning}" for warning in inspection.warnings]
    return lines


def _missing_ranks(client: Client, traceset: Traceset) -> list[int] | None:
    """The ranks of a pending traceset whose trace has not arrived (by file name)."""
    count = traceset.rankCountDerived
    if traceset.status != "pending" or count is None or count > MAX_RANKS_LISTED:
        return None
    try:  # the store's word: with S3 the service learns of arrivals only when asked
        received = client.upload_status(traceset.id).received
    except ClientError:
        received = [f.name for f in traceset.files if f.received]
    return missing_ranks(received, count)


@with_filter_options
def list_(
    where: ListFilter,
    limit: Annotated[
        int, typer.Option(min=0, help="Show at most this many, newest first; 0 for all.")
    ] = 50,
    sort: Annotated[
        Sort,
        typer.Option(
            help="-created (newest first), or a figure (gpu_idle_pct, comm_overlap_pct, "
            "step_ms): ascending, descending with a leading -; only tracesets with it."
        ),
    ] = DEFAULT_SORT,
    as_json: options.Json = False,
    url: options.Url = None,
    token: options.Token = None,
) -> None:
    """List tracesets, newest first or by a figure: a table, or JSON with --json."""
    with options.client(url, token) as client:
        found = client.list_tracesets(
            page_size=limit + 1 if limit else LIST_PAGE_MAX,
            sort=sort,
            **cast(ListFilters, where.given()),
        )
        items = list(islice(found, limit + 1) if limit else found)
    more = bool(limit) and len(items) > limit
    items = items[:limit] if limit else items
    if as_json:
        say(json_text(items))
    else:
        _table(items)
    if more:
        warn(f"(the first {limit}; --limit 0 shows all)")


def _table(items: list[TracesetSummary]) -> None:
    from rich.console import Console
    from rich.table import Table

    out = Console(highlight=False)
    if not out.is_terminal:
        out = Console(highlight=False, width=max(out.width, 200))
    table = Table(box=None, header_style="bold", pad_edge=False)
    for column in ("ID", "NAME", "STATUS", "RANKS", "FILES", "SIZE", "CREATED"):
        table.add_column(
            column,
            no_wrap=column != "NAME",
            justify="right" if column in ("RANKS", "FILES", "SIZE") else "left",
        )
    for t in items:
        table.add_row(
            t.id,
            t.name,
            t.status,
            "" if t.rankCountDerived is None else str(t.rankCountDerived),
            str(t.fileCount),
            size(t.fileBytes),
            _timestamp(t),
        )
    if items:
        out.print(table, markup=False)
    else:
        warn("no tracesets")


def promote(
    traceset_id: TracesetId,
    metadata_file: Annotated[
        Path | None,
        typer.Option(
            "--metadata",
            exists=True,
            dir_okay=False,
            help="A JSON file holding the new workloadMetadata.",
            show_default=False,
        ),
    ] = None,
    sets: Annotated[
        list[str] | None,
        typer.Option(
            "--set",
            metavar="KEY=VALUE",
            help="Change a member of the metadata (the file's, else the stored one). Repeatable.",
            show_default=False,
        ),
    ] = None,
    as_json: options.Json = False,
    url: options.Url = None,
    token: options.Token = None,
) -> None:
    """Promote a ready traceset, checking its metadata (or the new metadata given)."""
    with options.client(url, token) as client:
        new: Any = None
        if metadata_file is not None:
            new = metadata.read_file(metadata_file)
        elif sets:
            new = client.get_traceset(traceset_id).workloadMetadata
        new = metadata.build(new, sets=sets or ())
        promoted = client.promote_traceset(traceset_id, new)
    for warning in promoted.warnings:
        warn(f"warning: {warning}")
    say(json_text(promoted) if as_json else summary(promoted))


def download(
    traceset_id: TracesetId,
    names: Annotated[
        list[str] | None,
        typer.Argument(help="Files to download (default: all).", show_default=False),
    ] = None,
    dest: Annotated[
        Path,
        typer.Option(
            "--dest",
            "-d",
            file_okay=False,
            help="Folder to save into; files keep their relative paths.",
        ),
    ] = Path("."),
    concurrency: Annotated[int, typer.Option(min=1, max=64, help="Files at once.")] = 8,
    url: options.Url = None,
    token: options.Token = None,
) -> None:
    """Download a traceset's files, each checked against its sha256; files already there
    whole are skipped, so running it again resumes. Prints a summary."""
    with options.client(url, token, concurrency=concurrency) as client:
        traceset = client.get_traceset_answer(traceset_id)  # no pydantic on a download's way
        chosen = choose(traceset.files, names)
        total = sum(f.size for f in chosen)
        with display("downloading", "downloaded", len(chosen), total, hashing=False) as shown:
            done = client.download_traceset(
                traceset, dest, names=names or None, progress=shown.moved
            )
    say(download_summary(done))


def download_summary(done: DownloadSummary) -> str:
    files = done.downloaded + done.skipped
    rate = f", {size(int(done.bytes / done.seconds))}/s" if done.seconds > 0 else ""
    return (
        f"{files} file{'' if files == 1 else 's'} in {done.dest}: {done.downloaded} downloaded "
        f"({size(done.bytes)} in {done.seconds:.1f} s{rate}), {done.skipped} already there"
    )


def delete(
    traceset_ids: Annotated[
        list[str], typer.Argument(help="The tracesets' ids.", show_default=False)
    ],
    url: options.Url = None,
    token: options.Token = None,
) -> None:
    """Delete tracesets and their files: every id is tried; exit 1 if any was not deleted."""
    failed = 0
    with options.client(url, token) as client:
        for traceset_id in traceset_ids:
            try:
                client.delete_traceset(traceset_id)
            except ClientError as error:
                failed += 1
                warn(f"not deleted {traceset_id}:")
                for line in error_lines(error):
                    warn(f"  {line}")
                continue
            say(f"deleted {traceset_id}")
    if failed:
        warn(f"{failed} of {len(traceset_ids)} not deleted")
        raise typer.Exit(REFUSED)
