"""Tables of thousands of rows (a file and a rank each), printed without rich's cost.

rich measures, wraps and styles every cell: a second for a job's 4,096 files and 4,096
ranks, a fifth of ``tracesets inspect``. Where the output is plain (not a terminal, no
colours) and every cell is plain ASCII that markup and emoji codes leave alone, the
table needs none of that: each column is as wide as its widest cell, and the lines are
joined here, the same characters rich prints (``tests/cli/test_tables.py`` holds them
side by side). Anything else (a terminal, which wraps to its width; a name with other
characters; a cell rich would read as markup) is printed by rich as before.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:  # rich is imported when a table is printed, not at every start-up
    from rich.console import Console
    from rich.table import Table

#: What rich reads as an emoji code (``rich._emoji_replace``): a cell holding one is rich's.
_EMOJI_CODE: Final = re.compile(r":\S*?:")
#: rich's default box (HEAVY_HEAD): top, header, below the header, rows, bottom.
_TOP: Final = ("┏", "━", "┳", "┓")
_BELOW_HEADER: Final = ("┡", "━", "╇", "┩")
_BOTTOM: Final = ("└", "─", "┴", "┘")


@dataclass(frozen=True, slots=True)
class Rows:
    """A table's content: its headings, its rows of text, and a title above it."""

    headings: Sequence[str]
    rows: Sequence[Sequence[str]]
    title: str | None = None
    fold_first: bool = False  # the first column wraps within itself, never cut with "…"


def rich_table(rows: Rows) -> Table:
    from rich.table import Table

    table = Table(title=rows.title)
    for at, heading in enumerate(rows.headings):
        table.add_column(heading, overflow="fold" if at == 0 and rows.fold_first else "ellipsis")
    for row in rows.rows:
        table.add_row(*row)
    return table


def _plain(text: str) -> bool:
    return (
        text.isascii() and text.isprintable() and "[" not in text and not _EMOJI_CODE.search(text)
    )


def _rule(parts: tuple[str, str, str, str], widths: list[int]) -> str:
    left, line, cross, right = parts
    return left + cross.join(line * (width + 2) for width in widths) + right


def _line(cells: Sequence[str], widths: list[int], bar: str) -> str:
    padded = (
        f" {cell}{' ' * (width - len(cell))} " for cell, width in zip(cells, widths, strict=True)
    )
    return bar + bar.join(padded) + bar


def plain_text(rows: Rows, width: int) -> str | None:
    """The table as rich prints it on a plain console ``width`` wide, or None when only
    rich can say (a cell or title that is not plain, no rows, a title wider than the
    table, a table wider than the console)."""
    cells = [rows.headings, *rows.rows]
    if not rows.rows or any(len(row) != len(rows.headings) for row in rows.rows):
        return None
    if not all(_plain(cell) for row in cells for cell in row):
        return None
    widths = [max(len(row[at]) for row in cells) for at in range(len(rows.headings))]
    table_width = sum(widths) + 3 * len(widths) + 1
    if table_width > width:
        return None
    lines = []
    if rows.title:  # rich prints no empty title
        title = rows.title
        if not _plain(title) or title != title.strip() or len(title) > table_width:
            return None
        left = (table_width - len(title)) // 2
        lines.append(" " * left + title + " " * (table_width - len(title) - left))
    lines.append(_rule(_TOP, widths))
    lines.append(_line(rows.headings, widths, "┃"))
    lines.append(_rule(_BELOW_HEADER, widths))
    lines.extend(_line(row, widths, "│") for row in rows.rows)
    lines.append(_rule(_BOTTOM, widths))
    return "\n".join(lines) + "\n"


def print_rows(console: Console, rows: Rows, *, markup: bool = True) -> None:
    """Print the table: joined here when the console is plain and the cells allow it."""
    text = None
    if not console.is_terminal and console.color_system is None:
        text = plain_text(rows, console.width)
    if text is None:
        console.print(rich_table(rows), markup=markup)
    else:
        console.file.write(text)
        console.file.flush()
