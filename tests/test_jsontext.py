"""Strict JSON in (RFC 8259, nothing more), faithful JSON out."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.jsonvalues import json_values, plain_values, same_json
from tracesets.jsontext import MAX_DEPTH, JsonError, JsonNumber, dumps, is_whole_number, loads

# -- number kinds -----------------------------------------------------------------------


def test_2_is_an_integer() -> None:
    value = loads("2")
    assert type(value) is int and value == 2
    assert is_whole_number(value)


@pytest.mark.parametrize("literal", ["2.0", "2e0", "2E0", "2e+0", "20e-1", "0.5", "-2.0"])
def test_decimals_and_exponents_keep_their_literal_and_are_not_integers(literal: str) -> None:
    value = loads(literal)
    assert value == JsonNumber(literal)
    assert not is_whole_number(value)
    assert dumps(value) == literal.encode()


def test_2_and_2_0_and_2e0_are_three_different_values() -> None:
    two, two_point_zero, two_e_zero = loads("[2, 2.0, 2e0]")
    assert two != two_point_zero
    assert two_point_zero != two_e_zero
    assert dumps([two, two_point_zero, two_e_zero]) == b"[2,2.0,2e0]"


def test_true_and_false_are_not_numbers() -> None:
    assert loads("true") is True and loads("false") is False
    assert not is_whole_number(True)
    assert not is_whole_number(False)


def test_a_string_of_digits_is_not_a_number() -> None:
    assert loads('"4"') == "4"
    assert not is_whole_number("4")


def test_64_bit_integers_are_ints_and_round_trip() -> None:
    for n in [2**63 - 1, 2**64 - 1, -(2**63)]:
        value = loads(str(n))
        assert type(value) is int and value == n
        assert dumps(value) == str(n).encode()


def test_integers_beyond_64_bits_stay_whole_numbers_kept_as_text() -> None:
    for text in [str(2**64), str(-(2**63) - 1), "9" * 40]:
        value = loads(text)
        assert value == JsonNumber(text)
        assert is_whole_number(value)
        assert dumps(value) == text.encode()


def test_minus_zero_keeps_its_sign() -> None:
    value = loads("-0")
    assert value == JsonNumber("-0")
    assert value.is_negative
    assert dumps(value) == b"-0"
    assert dumps(loads("-0.0")) == b"-0.0"


def test_a_5000_digit_number_parses_and_round_trips() -> None:
    for text in ["9" * 5000, "-" + "9" * 5000, "1." + "0" * 4999 + "1", "1e" + "9" * 5000]:
        value = loads(text)
        assert isinstance(value, JsonNumber)
        assert dumps(value) == text.encode()
        assert dumps(loads(f'{{"n":{text}}}')) == f'{{"n":{text}}}'.encode()


def test_every_digit_of_0_1000000000000000000001_is_kept() -> None:
    text = '{"seq":0.1000000000000000000001}'
    assert loads(text)["seq"] == JsonNumber("0.1000000000000000000001")
    assert dumps(loads(text)) == text.encode()


# -- what RFC 8259 does not allow -------------------------------------------------------


def test_a_repeated_member_name_is_refused() -> None:
    with pytest.raises(JsonError, match='"rankCount" is repeated'):
        loads('{"shape":{"rankCount":8,"rankCount":16}}')


def test_a_repeated_member_name_is_refused_even_with_the_same_value() -> None:
    with pytest.raises(JsonError):
        loads('{"a":1,"a":1}')


def test_the_same_name_in_different_objects_is_allowed() -> None:
    assert loads('{"a":{"a":1},"b":[{"a":2}]}') == {"a": {"a": 1}, "b": [{"a": 2}]}


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity"])
def test_nan_and_infinity_are_refused(literal: str) -> None:
    with pytest.raises(JsonError, match=literal):
        loads(f'{{"shape":{{"x":{literal}}}}}')


@pytest.mark.parametrize(
    "text",
    [
        '{"a":1,}',
        "[1,2,]",
        "// comment\n{}",
        "/* comment */ {}",
        '{"a":1} # comment',
        "{'a':1}",
        "{a:1}",
        "01",
        "+1",
        ".5",
        "1.",
        "0x10",
        "",
        "   ",
        "{} {}",
        "[1] x",
        '"\t"',  # a raw control character inside a string
        "\u00a0{}",  # only space, tab, CR and LF are JSON whitespace
    ],
)
def test_what_rfc_8259_does_not_allow_is_refused(text: str) -> None:
    with pytest.raises(JsonError):
        loads(text)


@pytest.mark.parametrize(
    "body",
    [b'"\xff"', b'{"a":"\xc3"}', b'"\xc0\xaf"', b'"\xed\xa0\x80"', b"\x80{}"],
    ids=["0xff", "truncated", "overlong", "encoded-surrogate", "stray-continuation"],
)
def test_invalid_utf8_is_refused(body: bytes) -> None:
    with pytest.raises(JsonError, match="UTF-8"):
        loads(body)


def test_utf8_bytes_and_text_parse_the_same() -> None:
    text = '{"name":"東京 é ✓ 🚀"}'
    assert loads(text.encode()) == loads(text) == {"name": "東京 é ✓ 🚀"}


# -- depth ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "[" * 20_000 + "]" * 20_000,
        '{"a":' * 20_000 + "1" + "}" * 20_000,
        '{"a":[' * 10_000 + "]}" * 10_000,
        "[" * 20_000,  # unbalanced too
    ],
    ids=["arrays", "objects", "mixed", "unclosed"],
)
def test_20000_levels_of_nesting_is_a_json_error_not_a_recursion_error(text: str) -> None:
    with pytest.raises(JsonError, match="nested more than"):
        loads(text)


def test_nesting_up_to_the_limit_is_accepted_and_one_more_is_refused() -> None:
    assert loads("[" * MAX_DEPTH + "]" * MAX_DEPTH) is not None
    with pytest.raises(JsonError, match="nested more than"):
        loads("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1))
    with pytest.raises(JsonError, match="nested more than"):
        loads('{"a":' * (MAX_DEPTH + 1) + "1" + "}" * (MAX_DEPTH + 1))


def test_many_brackets_at_little_depth_are_accepted_and_depth_is_what_counts() -> None:
    wide = {"note": "[{" * MAX_DEPTH, "files": [{"name": f"r{i}"} for i in range(3 * MAX_DEPTH)]}
    assert loads(json.dumps(wide)) == wide
    deep: object = "[{" * MAX_DEPTH  # brackets in strings, then one level too many
    for _ in range(MAX_DEPTH + 1):
        deep = [deep]
    with pytest.raises(JsonError, match="nested more than"):
        loads(json.dumps(deep))


# -- writing ----------------------------------------------------------------------------


def test_a_lone_surrogate_escape_parses_but_cannot_be_written() -> None:
    value = loads('{"note":"\\ud800"}')
    assert value == {"note": "\ud800"}
    with pytest.raises(JsonError, match="UTF-8"):
        dumps(value)


def test_a_surrogate_pair_escape_is_one_character() -> None:
    value = loads('"\\ud83d\\ude80"')
    assert value == "🚀"
    assert dumps(value) == '"🚀"'.encode()


def test_round_trip_keeps_member_order() -> None:
    text = '{"zeta":1,"alpha":{"b":true,"a":false},"mid":[3,2,1],"Alpha":null}'
    value = loads(text)
    assert list(value) == ["zeta", "alpha", "mid", "Alpha"]
    assert list(value["alpha"]) == ["b", "a"]
    assert dumps(value) == text.encode()


def test_unicode_comes_back_unchanged_and_unescaped() -> None:
    text = '{"workload_name":"llama-3 70b ✓ 東京 é \u2028 \U0001f680","k\u00e9y":"\\u00e9\\n"}'
    assert dumps(loads(text)) == (
        '{"workload_name":"llama-3 70b ✓ 東京 é \u2028 \U0001f680","k\u00e9y":"é\\n"}'.encode()
    )


def test_dumps_is_compact() -> None:
    assert dumps(loads('{ "a" : [ 1 , 2 ] ,\n "b" : { } }')) == b'{"a":[1,2],"b":{}}'


def test_dumps_refuses_what_is_not_json() -> None:
    with pytest.raises(JsonError):
        dumps({1: "non-string key"})
    with pytest.raises(JsonError):
        dumps({"a": object()})
    with pytest.raises(JsonError):
        dumps(2**64)  # the parser never returns such an int: it keeps it as JsonNumber


# -- properties -------------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(plain_values)
def test_dumps_writes_what_the_standard_library_writes_compact_and_unescaped(value: Any) -> None:
    expected = json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()
    assert dumps(value) == expected


@settings(max_examples=300, deadline=None)
@given(json_values)
def test_every_value_round_trips_through_dumps_and_loads(value: Any) -> None:
    written = dumps(value)
    again = loads(written)
    assert same_json(again, value)
    assert dumps(again) == written


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.binary(max_size=64), st.text(max_size=64)))
def test_any_input_parses_or_is_a_json_error(body: bytes | str) -> None:
    try:
        loads(body)
    except JsonError as error:
        assert str(error)  # a message saying what is wrong, and no other exception
