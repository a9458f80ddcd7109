"""The rank-count rules against an independent oracle, on generated metadata.

The oracle below restates the source document's rules in a few lines, sharing no code
with ``tracesets.workload``: the two must agree on every generated object.
"""

from __future__ import annotations

import re
from typing import Any, Final

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.jsonvalues import json_values, same_json, texts
from tracesets.jsontext import JsonNumber, dumps, loads
from tracesets.workload import check_rank_count, check_upload_metadata

REFUSED: Final = "refused"
LIMIT: Final = 2_147_483_647
FACTORS: Final = ("dp", "tp", "sp", "ep", "pp")
SETTINGS: Final = settings(max_examples=300, deadline=None)


# -- the oracle -------------------------------------------------------------------------


class Refused(Exception):
    pass


def whole_number(value: Any) -> int:
    """The value of an integer literal of at least 1, else Refused."""
    if isinstance(value, bool):
        raise Refused
    if isinstance(value, int):
        number = value
    elif isinstance(value, JsonNumber) and re.fullmatch(r"-?[0-9]+", value.text):
        number = int(value.text)  # the generated literals stay well under 4,300 digits
    else:
        raise Refused
    if number < 1:
        raise Refused
    return number


def object_or_empty(value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise Refused
    return value


def expected_rank_count(metadata: Any, *, primary: bool) -> int | str | None:
    """The source document's rules, restated: the rank count, None, or REFUSED."""
    try:
        root = object_or_empty(metadata)
        shape = object_or_empty(root.get("shape"))
        parallelism = object_or_empty(root.get("parallelism"))
        stated = shape.get("rankCount")
        rank_count = None if stated is None else whole_number(stated)
        degrees = [whole_number(parallelism[k]) for k in FACTORS if parallelism.get(k) is not None]
    except Refused:
        return REFUSED
    product = None
    if degrees:
        product = 1
        for degree in degrees:
            product *= degree
    declared = [n for n in (rank_count, product) if n is not None]
    if not declared:
        return REFUSED if primary else None
    if any(n > LIMIT for n in declared) or len(set(declared)) > 1:
        return REFUSED
    return declared[0]


# -- generated metadata -----------------------------------------------------------------


def weighted(*choices: tuple[int, st.SearchStrategy[Any]]) -> st.SearchStrategy[Any]:
    """One of the strategies, drawn in proportion to its weight."""
    pool = [strategy for weight, strategy in choices for _ in range(weight)]
    return st.sampled_from(pool).flatmap(lambda strategy: strategy)


def literal(text: str) -> Any:
    return loads(text)


small_whole = st.integers(1, 12)
# Around the limit: 2**15 * 2**16 is exactly 2**31, 46,340**2 just under it, 46,341**2 over.
large_whole = st.sampled_from(
    [2**15, 2**16, 2**30, 46_340, 46_341, 2**31 - 1, 2**31, 2**32, 2**63 - 1, 2**64 - 1]
)
not_whole = st.one_of(
    st.sampled_from([0, -1, -(2**63)]),
    st.integers(-3, 0),
    st.integers(2**64, 2**130).map(str).map(literal),  # huge: whole, but over the limit
    st.integers(-(2**130), -(2**63) - 1).map(str).map(literal),
    st.sampled_from(
        ["2.0", "2e0", "1E1", "0.5", "-0", "-1.0", "1e400", "4.000", "1e-2", "8.0e0"]
    ).map(literal),
    st.sampled_from(["4", "", "one", "2.0"]),
    st.booleans(),
    st.lists(small_whole, max_size=2),
    st.dictionaries(st.sampled_from(["rankCount", "dp", "n"]), small_whole, max_size=2),
)
at_the_limit = st.sampled_from([2**31 - 1, 2**31])
member_values = weighted(
    (8, small_whole), (2, large_whole), (1, at_the_limit), (2, st.none()), (3, not_whole)
)
not_objects = st.one_of(
    st.integers(-2, 5), not_whole, texts, st.booleans(), st.lists(small_whole, max_size=2)
)


def container(members: dict[str, st.SearchStrategy[Any]]) -> st.SearchStrategy[Any]:
    """An object with any of the members (absent or given), null, or not an object."""
    objects = st.fixed_dictionaries({}, optional=members)
    return weighted((8, objects), (1, st.none()), (1, not_objects))


shapes = container(
    {
        "rankCount": member_values,
        "rank_count": member_values,
        "global_batch_size": member_values,
    }
)
parallelisms = container(
    {
        **dict.fromkeys(FACTORS, member_values),
        "cp": member_values,
        "fsdp": member_values,
        "DP": member_values,
    }
)
objects = container(
    {
        "workload_family": texts,
        "shape": shapes,
        "parallelism": parallelisms,
        "workloadName": texts,
    }
)


@st.composite
def metadatas(draw: st.DrawFn) -> Any:
    """Metadata where, as often as not, rankCount is (or is next to) the product."""
    metadata = draw(objects)
    if not isinstance(metadata, dict) or not draw(st.booleans()):
        return metadata
    shape, parallelism = metadata.get("shape"), metadata.get("parallelism")
    if isinstance(shape, dict) and isinstance(parallelism, dict):
        product = 1
        for name in FACTORS:
            if type(parallelism.get(name)) is int:
                product *= parallelism[name]
        shape["rankCount"] = product + draw(st.sampled_from([0, 0, 0, 1, -1]))
    return metadata


# 2**15 * 2**16 is exactly 2**31; 46,340 squared is just under the limit, 46,341 squared over.
near_the_limit = st.sampled_from([LIMIT, LIMIT + 1, 2**15, 2**16, 2**30, 46_340, 46_341])
whole_only = weighted((2, st.integers(1, 4)), (3, near_the_limit), (1, st.none()))
declarations = st.fixed_dictionaries(
    {},
    optional={
        "shape": st.fixed_dictionaries({}, optional={"rankCount": whole_only}),
        "parallelism": st.fixed_dictionaries({}, optional=dict.fromkeys(FACTORS, whole_only)),
    },
)


# -- properties -------------------------------------------------------------------------


@SETTINGS
@given(metadatas(), st.booleans())
def test_the_rules_agree_with_the_oracle(metadata: Any, primary: bool) -> None:
    expected = expected_rank_count(metadata, primary=primary)
    check = check_rank_count(metadata, has_primary_files=primary)
    if expected == REFUSED:
        assert check.problems, metadata
        assert check.rank_count is None
    else:
        assert check.problems == [], metadata
        assert check.rank_count == expected
    upload = check_upload_metadata(metadata, has_primary_files=primary)
    assert upload.ok == check.ok
    assert upload.rank_count == check.rank_count


@SETTINGS
@given(declarations, st.booleans())
def test_the_rules_agree_with_the_oracle_near_the_limit(metadata: Any, primary: bool) -> None:
    expected = expected_rank_count(metadata, primary=primary)
    check = check_rank_count(metadata, has_primary_files=primary)
    assert check.rank_count == (None if expected == REFUSED else expected)
    assert bool(check.problems) == (expected == REFUSED)


@SETTINGS
@given(metadatas(), st.booleans())
def test_every_problem_names_a_member_under_workload_metadata(metadata: Any, primary: bool) -> None:
    for problem in check_rank_count(metadata, has_primary_files=primary).problems:
        assert re.fullmatch(
            r"workloadMetadata(\.(shape|parallelism)(\.[a-zA-Z]+)?)?", problem.member
        )
        assert problem.message


@SETTINGS
@given(metadatas(), st.booleans())
def test_accepted_metadata_round_trips_unchanged(metadata: Any, primary: bool) -> None:
    check = check_upload_metadata(metadata, has_primary_files=primary)
    if not check.ok or metadata is None:
        return
    assert check.serialized is not None
    assert check.serialized == dumps(metadata)
    assert same_json(loads(check.serialized), metadata)


def placements(value: Any) -> list[Any]:
    return [
        value,
        {"shape": value},
        {"parallelism": value},
        {"shape": {"rankCount": value}},
        {"parallelism": {"dp": 2, "tp": value}},
        {"shape": {"rankCount": 4, "extra": value}, "parallelism": {"dp": 4, "cp": value}},
    ]


@SETTINGS
@given(json_values, st.booleans())
def test_any_json_value_anywhere_gives_problems_or_a_rank_count_never_an_exception(
    value: Any, primary: bool
) -> None:
    for metadata in placements(value):
        check = check_upload_metadata(metadata, has_primary_files=primary)
        assert check.ok == (check.problems == [])
        if check.ok:
            assert check.rank_count is None or 1 <= check.rank_count <= LIMIT
        assert all(isinstance(p.message, str) and p.message for p in check.problems)


@SETTINGS
@given(st.text(st.characters(), max_size=8), st.booleans())
def test_strings_with_lone_surrogates_are_problems_not_exceptions(text: str, primary: bool) -> None:
    for metadata in placements(text):
        check = check_upload_metadata(metadata, has_primary_files=primary)
        assert check.ok == (check.problems == [])
