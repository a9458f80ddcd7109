"""Strict JSON in, faithful JSON out.

Request bodies are parsed as RFC 8259 allows and nothing more: no ``NaN`` or
``Infinity``, no repeated member names. Every number keeps its JSON kind, so the
rules can tell ``2`` from ``2.0`` and ``2e0``: integers that fit in 64 bits become
``int``; every other number literal is kept as its exact text in a ``JsonNumber``,
which is how ``0.1000000000000000000001`` survives storage with all its digits.

``dumps`` is the one serializer for stored metadata, and its output is the
"serialized size" of the contract: compact separators, non-ASCII not escaped.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Final

import orjson

#: Deepest nesting accepted anywhere in a request body. Deeper documents are refused
#: with a clear error instead of exhausting the parser's stack.
MAX_DEPTH: Final = 100

_INT64_MIN: Final = -(2**63)
_UINT64_MAX: Final = 2**64 - 1


class JsonNumber:
    """A JSON number literal kept as written: a decimal, an exponent, or a huge integer.

    Deliberately not a dataclass: orjson would write a dataclass as an object, while a
    plain class reaches ``_fragment`` and goes out as its literal text.
    """

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __eq__(self, other: object) -> bool:
        return isinstance(other, JsonNumber) and other.text == self.text

    def __hash__(self) -> int:
        return hash(self.text)

    def __repr__(self) -> str:
        return f"JsonNumber({self.text!r})"

    @property
    def is_integer(self) -> bool:
        """True for an integer literal too large for 64 bits (no fraction, no exponent)."""
        return not any(c in self.text for c in ".eE")

    @property
    def is_negative(self) -> bool:
        return self.text.startswith("-")


class JsonError(ValueError):
    """The body is not JSON as the contract accepts it; the message says why."""


#: Any value the parser returns: dict, list, str, int, JsonNumber, bool or None.
JsonValue = Any


def _parse_int(text: str) -> int | JsonNumber:
    # Python refuses int() on more than 4,300 digits, and orjson cannot write integers
    # beyond 64 bits: keep those as text, they are still integers for the rules.
    if len(text) <= 20 and text != "-0":  # int("-0") would lose the sign
        value = int(text)
        if _INT64_MIN <= value <= _UINT64_MAX:
            return value
    return JsonNumber(text)


def _refuse_constant(name: str) -> Any:
    raise JsonError(f"{name} is not a JSON number; RFC 8259 JSON has no {name}")


def _object_without_repeats(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise JsonError(f'The member name "{key}" is repeated in one JSON object')
            seen.add(key)
    return obj


_decoder: Final = json.JSONDecoder(
    object_pairs_hook=_object_without_repeats,
    parse_float=JsonNumber,
    parse_int=_parse_int,
    parse_constant=_refuse_constant,
    strict=True,
)


def loads(body: bytes | str) -> JsonValue:
    """Parse a request body strictly; raise JsonError naming what is wrong."""
    if isinstance(body, bytes):
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise JsonError(f"The body is not valid UTF-8 (byte {exc.start})") from None
    else:
        text = body
    try:
        value = _decoder.decode(text)
    except RecursionError:
        raise JsonError(f"JSON is nested more than {MAX_DEPTH} levels deep") from None
    except json.JSONDecodeError as exc:
        raise JsonError(
            f"Malformed JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"
        ) from None
    # A document cannot nest deeper than it has brackets: most bodies need no walk.
    deep = text.count("{") + text.count("[") > MAX_DEPTH
    if deep and _depth_exceeds(value, MAX_DEPTH):
        raise JsonError(f"JSON is nested more than {MAX_DEPTH} levels deep")
    return value


def _depth_exceeds(value: JsonValue, limit: int) -> bool:
    stack: list[tuple[JsonValue, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


def _fragment(value: Any) -> orjson.Fragment:
    if isinstance(value, JsonNumber):
        return orjson.Fragment(value.text)
    raise TypeError(f"{type(value).__name__} is not JSON")


_default: Final[Callable[[Any], Any]] = _fragment


def dumps(value: JsonValue) -> bytes:
    """Compact UTF-8 JSON exactly as given: member order, number literals, Unicode.

    Raises JsonError for strings that cannot be UTF-8 (lone surrogates from ``\\ud800``).
    """
    try:
        return orjson.dumps(value, default=_default)
    except orjson.JSONEncodeError as exc:
        raise JsonError(f"The value cannot be stored as UTF-8 JSON: {exc}") from None


def dumps_indented(value: JsonValue) -> str:
    """For people: indented by two, numbers exactly as given, datetimes in UTC with ``Z``."""
    try:
        text = orjson.dumps(value, default=_default, option=orjson.OPT_INDENT_2 | orjson.OPT_UTC_Z)
    except orjson.JSONEncodeError as exc:
        raise JsonError(f"The value cannot be written as UTF-8 JSON: {exc}") from None
    return text.decode()


def is_whole_number(value: JsonValue) -> bool:
    """An integer literal (``2``, not ``2.0``, ``2e0``, ``"2"`` or ``true``)."""
    return (type(value) is int) or (isinstance(value, JsonNumber) and value.is_integer)
