"""``tracesets list``'s filter options: one per filter of the vocabulary, none restated.

Typer reads a command's options from its signature, so the command is given one made
from ``vocabulary.FILTERS``: ``--workload-family``, ``--rank-count``,
``--inspected-ok/--no-inspected-ok``… A filter added to the vocabulary is an option here
with nothing else to change.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Annotated, Any

import typer

from tracesets.vocabulary import FILTERS, STATUSES, Filter, ListFilter


def _option(term: Filter) -> inspect.Parameter:
    flag = "--" + term.name.replace("_", "-")
    help_text = term.description
    option: Any
    if term.kind == "boolean":
        option = typer.Option(
            f"{flag}/--no-{flag[2:]}", help=help_text + " Not given: either.", show_default=False
        )
        kind: Any = bool
    elif term.kind == "integer":
        option = typer.Option(flag, min=1, max=term.maximum, help=help_text, show_default=False)
        kind = int
    elif term.kind == "decimal":
        option = typer.Option(flag, help=help_text, show_default=False)
        kind = float
    elif term.kind == "status":
        option = typer.Option(flag, help=f"{', '.join(STATUSES)}.", show_default=False)
        kind = str
    else:
        option = typer.Option(flag, help=help_text, show_default=False)
        kind = str
    return inspect.Parameter(
        term.name,
        inspect.Parameter.POSITIONAL_OR_KEYWORD,
        default=None,
        annotation=Annotated[kind | None, option],
    )


def with_filter_options(command: Callable[..., None]) -> Callable[..., None]:
    """``command`` (which takes ``where: ListFilter``) with an option per list filter, in
    place of ``where``; its other parameters follow unchanged."""
    own = inspect.signature(command, eval_str=True)
    rest = [p for name, p in own.parameters.items() if name != "where"]
    names = [term.name for term in FILTERS]

    def run(**given: Any) -> None:
        where = ListFilter(**{name: given.pop(name) for name in names})
        command(where=where, **given)

    run.__name__, run.__qualname__, run.__doc__ = (
        command.__name__,
        command.__qualname__,
        command.__doc__,
    )
    run.__signature__ = own.replace(  # type: ignore[attr-defined]
        parameters=[*(_option(term) for term in FILTERS), *rest]
    )
    return run
