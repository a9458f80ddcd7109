"""``tracesets compare``: a traceset against a baseline, from what their inspections stored.

A headline (median step, GPU idle, communication overlap, the largest contributors),
then the per-rank table and the per-kernel table; ``--operators`` prints the operator
table instead. Thousands of ranks do not fit a screen: past ``SHOWN_RANKS`` only the
ranks that changed most are listed (``--all-ranks`` lists every one), and one line
names the ranks only one side has.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum
from itertools import islice
from typing import TYPE_CHECKING, Annotated, Final

import typer

from tracesets.cli import options
from tracesets.cli.inspect import ranks_list
from tracesets.cli.output import json_text, say

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

    from tracesets.client import Client, ComparedKernel, ComparedOperator, ComparedRank, Comparison
    from tracesets.client.calls import Step
    from tracesets.client.models import Headline, RankBreakdown, RankDifference

#: Ranks listed when there are more: those that changed most.
SHOWN_RANKS: Final = 16
#: Kernels and operators listed, by absolute difference in time.
SHOWN_KERNELS: Final = 20
SHOWN_OPERATORS: Final = 30
#: A kernel or operator name is cut to this many characters in a table (``--json``: whole).
NAME_WIDTH: Final = 60
MISSING: Final = "-"


class OperatorStep(StrEnum):
    all = "all"
    first = "first"


def compare(
    traceset_id: Annotated[str, typer.Argument(help="The traceset's id.", show_default=False)],
    baseline_id: Annotated[
        str, typer.Argument(help="The baseline traceset's id.", show_default=False)
    ],
    operators: Annotated[
        OperatorStep | None,
        typer.Option(
            "--operators",
            help="Print the per-operator table instead (as HTA's TraceDiff): 'all' counts "
            "every profiled step of every rank, 'first' the first step of each side's "
            "first rank (HTA's defaults).",
            show_default=False,
        ),
    ] = None,
    all_ranks: Annotated[
        bool,
        typer.Option(
            "--all-ranks", help=f"List every rank, not the {SHOWN_RANKS} that changed most."
        ),
    ] = False,
    as_json: options.Json = False,
    url: options.Url = None,
    token: options.Token = None,
) -> None:
    """Compare a traceset with a baseline: the headline, then per rank and per kernel."""
    with options.client(url, token) as client:
        if operators is not None:
            step: Step = "first" if operators is OperatorStep.first else "all"
            _operators(client, traceset_id, baseline_id, step, as_json=as_json)
            return
        comparison = _whole(client, client.compare(traceset_id, baseline_id))
    if as_json:
        say(json_text(comparison))
        return
    for line in headline_lines(comparison):
        say(line)
    out = _stdout()
    say("")
    if not comparison.perRankCompared:
        say(comparison.perRankNote or "per-rank rows omitted: the rank counts differ")
    elif comparison.ranks:
        _print_ranks(out, comparison.ranks, every=all_ranks)
    _print_kernels(out, comparison.kernels)


def _whole(client: Client, comparison: Comparison) -> Comparison:
    """The comparison with every rank and kernel, the pages past the first fetched."""
    ranks, kernels = comparison.ranks, comparison.kernels
    if comparison.ranksNextCursor is not None:
        ranks = list(client.compare_ranks(comparison.tracesetId, comparison.baselineId))
    if comparison.kernelsNextCursor is not None:
        kernels = list(client.compare_kernels(comparison.tracesetId, comparison.baselineId))
    return comparison.model_copy(
        update={
            "ranks": ranks,
            "kernels": kernels,
            "ranksNextCursor": None,
            "kernelsNextCursor": None,
        }
    )


def _stdout() -> Console:
    """Piped, a table is as wide as it needs (names are cut at ``NAME_WIDTH`` anyway)."""
    from rich.console import Console

    out = Console(highlight=False)
    return out if out.is_terminal else Console(highlight=False, width=max(out.width, 200))


def _number(value: float | None, digits: int = 2, *, sign: bool = False) -> str:
    if value is None:
        return MISSING
    return f"{value:+,.{digits}f}" if sign else f"{value:,.{digits}f}"


def _ratio(value: float | None) -> str:
    return MISSING if value is None else f"×{value:.3f}"


def headline_lines(comparison: Comparison) -> list[str]:
    """What changed overall: each figure of both sides and the difference."""
    head: Headline = comparison.headline
    ratio = head.stepRatio
    change = "" if ratio is None else f" ({(ratio - 1) * 100:+.1f} %)"
    ranks = f"{_count(comparison.rankCount)} ranks against {_count(comparison.baselineRankCount)}"
    return [
        f"{comparison.tracesetId} against baseline {comparison.baselineId} ({ranks})",
        f"  median step   {_number(head.stepMs):>12} ms   baseline {_number(head.baselineStepMs):>12} ms"
        f"   {_ratio(ratio)}{change}",
        f"  GPU idle      {_number(head.gpuIdlePct):>12} %    baseline {_number(head.baselineGpuIdlePct):>12} %"
        f"    {_number(head.gpuIdleDiffPct, sign=True)} points",
        f"  comm overlap  {_number(head.commOverlapPct):>12} %    baseline "
        f"{_number(head.baselineCommOverlapPct):>12} %    {_number(head.commOverlapDiffPct, sign=True)} points",
        "  most of the change:" + ("" if head.contributors else " none"),
        *(f"    {c.kind:<8} {c.diffUs:>+14,.1f} µs  {_cut(c.name)}" for c in head.contributors),
    ]  # fmt: skip


def _count(value: int | None) -> str:
    return "?" if value is None else f"{value:,}"


def _cut(name: str) -> str:
    return name if len(name) <= NAME_WIDTH else name[: NAME_WIDTH - 1] + "…"


def change(row: ComparedRank) -> float:
    """How far a rank moved: its step time change (percent) or its GPU idle change
    (points), whichever is larger; 0 for a rank only one side has."""
    step = 0.0 if row.stepRatio is None else abs(row.stepRatio - 1) * 100
    idle = row.diff.idlePct if row.diff is not None else None
    return max(step, 0.0 if idle is None else abs(idle))


def shown_ranks(ranks: Sequence[ComparedRank], *, every: bool) -> tuple[list[ComparedRank], str]:
    """The ranks of both sides to list and the table's title: all of them in rank order,
    or past ``SHOWN_RANKS`` those that changed most, most first."""
    both = [r for r in ranks if r.present == "both"]
    if every or len(both) <= SHOWN_RANKS:
        return both, "per rank (this traceset / baseline; diff: points of kernel time)"
    top = sorted(both, key=lambda r: (-change(r), r.rank))[:SHOWN_RANKS]
    return top, (
        f"the {SHOWN_RANKS} ranks that changed most of {len(both):,} (step time or GPU idle; "
        "--all-ranks lists every rank)"
    )


def _print_ranks(out: Console, ranks: Sequence[ComparedRank], *, every: bool) -> None:
    rows, title = shown_ranks(ranks, every=every)
    table = _table(
        title,
        ("RANK", "STEP MS", "BASE MS", "RATIO", "IDLE %", "BASE", "DIFF", "COMPUTE %", "BASE",
         "DIFF", "NON-COMPUTE %", "BASE", "DIFF"),
    )  # fmt: skip
    for row in rows:
        ours, theirs, diff = row.traceset, row.baseline, row.diff
        cells = [str(row.rank), _number(_get(ours, "stepMs")), _number(_get(theirs, "stepMs")),
                 _ratio(row.stepRatio)]  # fmt: skip
        for name in ("idlePct", "computePct", "nonComputePct"):
            cells += [
                _number(_get(ours, name)),
                _number(_get(theirs, name)),
                _number(_get(diff, name), sign=True),
            ]
        table.add_row(*cells)
    if rows:
        out.print(table, markup=False)
    for side in ("traceset", "baseline"):
        alone = [r.rank for r in ranks if r.present == side]
        if alone:
            say(f"ranks only the {side} has ({len(alone):,}): {ranks_list(alone)}")
    say("")


def _get(value: RankBreakdown | RankDifference | None, name: str) -> float | None:
    figure: float | None = None if value is None else getattr(value, name)
    return figure


def _print_kernels(out: Console, kernels: Sequence[ComparedKernel]) -> None:
    if not kernels:
        say("kernels: none on either side")
        return
    title = "kernels, by absolute difference in time (summed over ranks)"
    table = _table(title, ("KERNEL", "TYPE", "COUNT", "BASE", "SUM µs", "BASE µs", "DIFF µs"))
    for kernel in kernels[:SHOWN_KERNELS]:
        table.add_row(
            _cut(kernel.name),
            kernel.type,
            f"{kernel.count:,}",
            f"{kernel.baselineCount:,}",
            _number(kernel.sumUs, 1),
            _number(kernel.baselineSumUs, 1),
            _number(kernel.diffUs, 1, sign=True),
        )
    out.print(table, markup=False)
    if len(kernels) > SHOWN_KERNELS:
        say(f"… {len(kernels) - SHOWN_KERNELS:,} more kernels (--json lists every one)")


def _operators(
    client: Client, traceset_id: str, baseline_id: str, step: Step, *, as_json: bool
) -> None:
    found = client.compare_operators(traceset_id, baseline_id, step)
    if as_json:
        say(json_text(list(found)))
        return
    rows: list[ComparedOperator] = list(islice(found, SHOWN_OPERATORS + 1))
    if not rows:
        say("operators: none on either side")
        return
    steps = (
        "every profiled step of every rank"
        if step == "all"
        else "each side's first step of its first rank"
    )
    table = _table(
        f"operators and kernels, by absolute difference in time ({steps})",
        ("NAME", "COUNT", "BASE", "DIFF", "TOTAL µs", "BASE µs", "DIFF µs"),
    )
    for row in rows[:SHOWN_OPERATORS]:
        table.add_row(
            _cut(row.name),
            f"{row.count:,}",
            f"{row.baselineCount:,}",
            f"{row.countDiff:+,}",
            _number(row.totalUs, 1),
            _number(row.baselineTotalUs, 1),
            _number(row.totalUsDiff, 1, sign=True),
        )
    _stdout().print(table, markup=False)
    if len(rows) > SHOWN_OPERATORS:
        say(f"… more operators (--operators {step} --json lists every one)")


def _table(title: str, columns: Sequence[str]) -> Table:
    """A table in ``list``'s style: no box, bold headings, figures to the right."""
    from rich.table import Table

    table = Table(box=None, header_style="bold", pad_edge=False, title=title, title_justify="left")
    for at, column in enumerate(columns):
        first = at == 0
        table.add_column(
            column,
            no_wrap=True,
            justify="left" if first or column == "TYPE" else "right",
            max_width=NAME_WIDTH if first else None,
        )
    return table
