"""Large tables joined by hand print exactly what rich prints, or are left to rich."""

from __future__ import annotations

import io

from hypothesis import event, given, settings
from hypothesis import strategies as st
from rich.console import Console

from tracesets.cli.tables import Rows, plain_text, print_rows, rich_table

#: Printable ASCII, spaces and what rich may read as markup or emoji among it.
ANY_CELL = st.text(st.sampled_from("ab Z09-_.%():[]/\\é日\t"), max_size=12)
#: What a job's tables hold: names, numbers, spaces.
PLAIN_CELL = st.text(st.sampled_from("ab Z09-_.%()/ "), max_size=12)


def rich_prints(rows: Rows, width: int, markup: bool = True) -> str:
    out = io.StringIO()
    Console(highlight=False, width=width, file=out).print(rich_table(rows), markup=markup)
    return out.getvalue()


@st.composite
def tables(draw: st.DrawFn) -> Rows:
    columns = draw(st.integers(1, 6))
    cells = draw(st.sampled_from([PLAIN_CELL, ANY_CELL]))
    headings = draw(st.lists(cells.filter(bool), min_size=columns, max_size=columns))
    rows = draw(st.lists(st.lists(cells, min_size=columns, max_size=columns), max_size=6))
    title = draw(st.one_of(st.none(), cells, st.just("per-rank figures (step ms: median)")))
    return Rows(headings, rows, title=title, fold_first=draw(st.booleans()))


@settings(max_examples=600, deadline=None)
@given(rows=tables(), width=st.sampled_from([20, 80, 100_000]), markup=st.booleans())
def test_a_table_joined_by_hand_is_what_rich_prints(rows: Rows, width: int, markup: bool) -> None:
    text = plain_text(rows, width)
    event("joined by hand" if text is not None else "left to rich")
    if text is not None:
        assert text == rich_prints(rows, width, markup)


def test_a_job_s_table_is_joined_by_hand() -> None:
    rows = Rows(
        ["file", "rank", "problem"],
        [[f"rank-{rank}.json.gz", str(rank), ""] for rank in range(4096)],
        title="the files (rank: as the trace says)",
        fold_first=True,
    )
    text = plain_text(rows, 100_000)
    assert text is not None and text == rich_prints(rows, 100_000)
    assert len(text.splitlines()) == 4096 + 5


def test_what_only_rich_can_print_is_left_to_it() -> None:
    plain = [["a", "b"]]
    assert plain_text(Rows(["x", "y"], plain), 100) is not None
    for rows in (
        Rows(["x", "y"], [["[bold]a", "b"]]),  # markup
        Rows(["x", "y"], [["a:smile:", "b"]]),  # an emoji code
        Rows(["x", "y"], [["日本", "b"]]),  # wide characters
        Rows(["x", "y"], [["a\tb", "b"]]),  # a tab
        Rows(["x", "y"], []),  # no rows
        Rows(["x", "y"], plain, title="a title wider than the table"),
    ):
        assert plain_text(rows, 100) is None
    assert plain_text(Rows(["x", "y"], [["a" * 200, "b"]]), 100) is None  # wider than the console


def test_a_terminal_gets_rich_s_table() -> None:
    out = io.StringIO()
    rows = Rows(["x"], [["a"]])
    print_rows(Console(file=out, force_terminal=True, width=40), rows)
    assert "\x1b[" in out.getvalue()  # rich's styles: not joined by hand
