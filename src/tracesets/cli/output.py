"""What the command line prints: results on stdout; errors, warnings and progress on stderr.

Exit codes: 0 success, 1 refused by a rule or the service (or no answer), 2 usage.
"""

from __future__ import annotations

import sys
from functools import cache
from typing import TYPE_CHECKING, Any, Final, NoReturn

import typer

from tracesets import jsontext
from tracesets.client import ClientError
from tracesets.client.answers import TracesetAnswer

if TYPE_CHECKING:
    from rich.console import Console

REFUSED: Final = 1
USAGE: Final = 2
MAX_VALUE_CHARS: Final = 120


@cache
def stderr_console() -> Console:
    """Rich output (tables, bars) only; plain lines go through ``say``/``warn`` unstyled.
    Made (and rich imported) when first needed: an upload from a script never needs it."""
    from rich.console import Console

    return Console(stderr=True, highlight=False)


def say(text: str) -> None:
    print(text, flush=True)


def warn(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def size(count: int) -> str:
    from rich.filesize import decimal  # small: no console

    return decimal(count)


def json_text(value: Any) -> str:
    """Indented JSON with every number exactly as the service sent it (models included)."""
    if isinstance(value, list):
        value = [_printed(v) for v in value]
    return jsontext.dumps_indented(_printed(value))


def _printed(value: Any) -> Any:
    """A wire model or an answer as the object it prints as; anything else as it is."""
    if isinstance(value, TracesetAnswer):
        return value.printed()
    pydantic = sys.modules.get("pydantic")  # a model was made, so pydantic was imported
    if pydantic is not None and isinstance(value, pydantic.BaseModel):
        return value.model_dump()
    return value


def shown(value: Any) -> str:
    """A problem's value as JSON, cut short when it is long."""
    try:
        text = jsontext.dumps(value).decode()
    except (jsontext.JsonError, TypeError):
        text = repr(value)
    if len(text) > MAX_VALUE_CHARS:
        text = text[: MAX_VALUE_CHARS - 1] + "…"
    return text


def error_lines(error: ClientError) -> list[str]:
    """One line saying what happened, then one per problem: member, value given, rule."""
    if not error.problems:
        lines = [f"error: {error.detail}"]
    elif not error.sent:
        lines = ["error: refused by the upload rules; nothing was sent"]
    else:
        lines = [f"error: the service refused it ({error.status} {error.title or ''})".rstrip()]
    for problem in error.problems:
        where = f"{problem.member} = {shown(problem.value)}: " if problem.member else ""
        lines.append(f"  {where}{problem.message}")
    if error.traceset_id is not None:
        lines.append(
            f"The traceset {error.traceset_id} stays pending; running the same command again "
            "sends only what has not arrived."
        )
    return lines


def fail_usage(message: str) -> NoReturn:
    warn(f"error: {message}")
    raise typer.Exit(USAGE)
