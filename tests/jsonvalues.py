"""Hypothesis strategies for JSON values as the parser returns them, and a strict comparison.

Shared by the jsontext and workload tests; nothing here comes from the code under test
except the ``JsonNumber`` type the values are made of.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from tracesets.jsontext import JsonNumber

INT64_MIN = -(2**63)
UINT64_MAX = 2**64 - 1

#: Strings as JSON can carry them, lone surrogates aside (``dumps`` refuses those).
texts = st.text(st.characters(exclude_categories=["Cs"]), max_size=12)

#: Integers the parser returns as ``int``: the 64-bit range, signed or unsigned.
machine_ints = st.integers(INT64_MIN, UINT64_MAX)

#: Number literals the parser keeps as text: decimals, exponents, integers beyond 64 bits.
_integer_part = st.from_regex(r"-?(0|[1-9][0-9]{0,30})", fullmatch=True)
_fraction = st.from_regex(r"\.[0-9]{1,30}", fullmatch=True)
_exponent = st.from_regex(r"[eE][-+]?[0-9]{1,4}", fullmatch=True)
decimal_literals = st.one_of(
    st.tuples(_integer_part, _fraction, st.just("")),
    st.tuples(_integer_part, st.just(""), _exponent),
    st.tuples(_integer_part, _fraction, _exponent),
).map("".join)
huge_int_literals = st.one_of(
    st.integers(UINT64_MAX + 1, 2**200), st.integers(-(2**200), INT64_MIN - 1)
).map(str)
json_numbers = st.one_of(decimal_literals, huge_int_literals, st.just("-0")).map(JsonNumber)

plain_scalars = st.one_of(st.none(), st.booleans(), machine_ints, texts)
scalars = st.one_of(plain_scalars, json_numbers)


def _containers(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(st.lists(children, max_size=4), st.dictionaries(texts, children, max_size=4))


#: Any JSON value without ``JsonNumber``: what the standard library can write too.
plain_values = st.recursive(plain_scalars, _containers, max_leaves=20)

#: Any JSON value the parser can return.
json_values = st.recursive(scalars, _containers, max_leaves=20)


def same_json(a: Any, b: Any) -> bool:
    """Equal as JSON, kinds included: ``1`` is not ``true``, ``2`` is not ``2.0``, order counts."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same_json(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same_json(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)
