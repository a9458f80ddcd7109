"""The rank-count rules of workload metadata, one test per rule of the source document.

``seed/workload-metadata.txt`` is the law: each test below names the rule it holds.
"""

from __future__ import annotations

from typing import Any

import pytest

from tracesets.jsontext import JsonNumber, dumps, loads
from tracesets.problems import Problem
from tracesets.workload import check_rank_count, check_upload_metadata

#: Quoted from the source document's Errors section.
MISSING_RANK_COUNT = (
    "Uploads with primary trace files must declare a rank count: set "
    "workloadMetadata.shape.rankCount, or workloadMetadata.parallelism degrees "
    "(dp, tp, sp, ep, pp)"
)
LIMIT = 2_147_483_647
RANK_COUNT_MEMBERS = [
    ("shape", "rankCount"),
    ("parallelism", "dp"),
    ("parallelism", "tp"),
    ("parallelism", "sp"),
    ("parallelism", "ep"),
    ("parallelism", "pp"),
]


def rank_count(metadata: Any, *, primary: bool = True) -> int | None:
    """The derived rank count of metadata every rule accepts (fails the test otherwise)."""
    check = check_upload_metadata(metadata, has_primary_files=primary)
    assert check.problems == []
    assert check.ok
    return check.rank_count


def problems(metadata: Any, *, primary: bool = True) -> list[Problem]:
    """The problems of metadata some rule refuses (fails the test if none does)."""
    check = check_upload_metadata(metadata, has_primary_files=primary)
    assert check.problems, f"accepted: {metadata!r}"
    assert not check.ok
    assert check.rank_count is None and check.serialized is None
    return check.problems


def only_problem(metadata: Any, *, primary: bool = True) -> Problem:
    found = problems(metadata, primary=primary)
    assert len(found) == 1, found
    return found[0]


def given(container: str, member: str, value: Any) -> dict[str, Any]:
    return {container: {member: value}}


# -- declaring the rank count -----------------------------------------------------------


def test_shape_rank_count_alone_is_enough() -> None:
    assert rank_count({"shape": {"rankCount": 256}}) == 256


def test_the_rank_count_is_the_product_of_the_parallelism_degrees() -> None:
    degrees = {"dp": 2, "tp": 3, "sp": 5, "ep": 7, "pp": 11}
    assert rank_count({"parallelism": degrees}) == 2 * 3 * 5 * 7 * 11


def test_an_absent_degree_counts_as_1() -> None:
    assert rank_count({"parallelism": {"dp": 4}}) == 4
    assert rank_count({"parallelism": {"pp": 3, "ep": 5}}) == 15


def test_the_documents_example_declared_both_ways_is_256() -> None:
    metadata = {"parallelism": {"dp": 32, "tp": 8, "pp": 1}, "shape": {"rankCount": 256}}
    assert rank_count(metadata) == 256


def test_rank_count_of_1_is_the_smallest_accepted() -> None:
    assert rank_count({"shape": {"rankCount": 1}}) == 1
    assert rank_count({"parallelism": {"dp": 1, "tp": 1, "sp": 1, "ep": 1, "pp": 1}}) == 1


def test_product_must_equal_rank_count_naming_both() -> None:
    metadata = {"shape": {"rankCount": 256}, "parallelism": {"dp": 32, "tp": 4}}
    problem = only_problem(metadata)
    assert problem.member == "workloadMetadata.shape.rankCount"
    assert problem.value == 256
    assert "256" in problem.message
    assert "128" in problem.message
    assert "product" in problem.message


def test_product_mismatch_is_refused_even_with_a_degree_of_1() -> None:
    problem = only_problem({"shape": {"rankCount": 8}, "parallelism": {"pp": 1}})
    assert "8" in problem.message and "1" in problem.message


def test_huge_equal_forms_are_not_a_mismatch() -> None:
    big = "1" + "0" * 5000
    half = "1" + "0" * 2500
    metadata = loads(f'{{"shape":{{"rankCount":{big}}},"parallelism":{{"dp":{half},"tp":{half}}}}}')
    messages = [p.message for p in problems(metadata)]
    assert len(messages) == 2, messages
    assert all("must not exceed 2,147,483,647" in m for m in messages)
    assert not any("must equal the product" in m for m in messages)


def test_huge_different_forms_are_a_mismatch() -> None:
    big = "1" + "0" * 5000
    metadata = loads(f'{{"shape":{{"rankCount":{big}}},"parallelism":{{"dp":{big},"tp":2}}}}')
    assert any("must equal the product" in p.message for p in problems(metadata))


def test_a_64_bit_rank_count_against_a_huge_product_is_a_mismatch() -> None:
    metadata = loads('{"shape":{"rankCount":4294967296},"parallelism":{"dp":' + "9" * 30 + "}}")
    assert any("must equal the product" in p.message for p in problems(metadata))


# -- whole numbers of at least 1 --------------------------------------------------------


def test_rank_count_2_0_is_not_a_whole_number() -> None:
    problem = only_problem(loads('{"shape":{"rankCount":2.0}}'))
    assert problem.member == "workloadMetadata.shape.rankCount"
    assert problem.value == JsonNumber("2.0")
    assert "shape.rankCount" in problem.message
    assert "2.0" in problem.message
    assert "whole number of at least 1" in problem.message


def test_2e0_is_not_an_integer() -> None:
    problem = only_problem(loads('{"parallelism":{"dp":2e0}}'))
    assert problem.member == "workloadMetadata.parallelism.dp"
    assert "parallelism.dp" in problem.message and "2e0" in problem.message


def test_string_4_is_refused() -> None:
    problem = only_problem({"shape": {"rankCount": "4"}})
    assert problem.value == "4"
    assert '"4"' in problem.message and "shape.rankCount" in problem.message


@pytest.mark.parametrize("literal", ["0", "-1", "2.0", "2e0", '"4"', "true", "false", "-0", "1.5"])
@pytest.mark.parametrize(("container", "member"), RANK_COUNT_MEMBERS)
def test_each_rank_count_member_must_be_a_whole_number_of_at_least_1(
    container: str, member: str, literal: str
) -> None:
    metadata = loads(f'{{"{container}":{{"{member}":{literal}}}}}')
    problem = only_problem(metadata)
    assert problem.member == f"workloadMetadata.{container}.{member}"
    assert problem.value == loads(literal)
    assert type(problem.value) is type(loads(literal))
    assert f"{container}.{member}" in problem.message
    assert literal in problem.message
    assert "whole number of at least 1" in problem.message


def test_0_and_minus_1_are_refused() -> None:
    for value in (0, -1):
        problem = only_problem({"shape": {"rankCount": value}})
        assert str(value) in problem.message


def test_true_and_false_are_not_numbers() -> None:
    for value in (True, False):
        problem = only_problem({"parallelism": {"tp": value}})
        assert problem.value is value
        assert ("true" if value else "false") in problem.message


@pytest.mark.parametrize("value", [[], [4], {}, {"n": 4}])
def test_containers_are_not_whole_numbers(value: Any) -> None:
    assert (
        only_problem(given("parallelism", "pp", value)).member == "workloadMetadata.parallelism.pp"
    )


def test_a_huge_negative_rank_count_is_not_a_whole_number_of_at_least_1() -> None:
    problem = only_problem(loads('{"shape":{"rankCount":-' + "9" * 5000 + "}}"))
    assert "whole number of at least 1" in problem.message


# -- the limit --------------------------------------------------------------------------


def test_rank_count_of_2147483647_accepted() -> None:
    assert rank_count({"shape": {"rankCount": LIMIT}}) == LIMIT
    assert rank_count({"parallelism": {"dp": LIMIT}}) == LIMIT


def test_rank_count_over_2147483647_refused() -> None:
    problem = only_problem({"shape": {"rankCount": LIMIT + 1}})
    assert problem.member == "workloadMetadata.shape.rankCount"
    assert problem.value == LIMIT + 1
    assert "must not exceed 2,147,483,647" in problem.message
    assert "2147483648" in problem.message


def test_a_5000_digit_rank_count_must_not_exceed_the_limit() -> None:
    digits = "9" * 5000
    problem = only_problem(loads(f'{{"shape":{{"rankCount":{digits}}}}}'))
    assert "must not exceed 2,147,483,647" in problem.message
    assert problem.value == JsonNumber(digits)


def test_product_over_limit_refused() -> None:
    metadata = {"parallelism": {"dp": 65_536, "tp": 32_768, "cp": 2}}  # 2**31
    problem = only_problem(metadata)
    assert problem.member == "workloadMetadata.parallelism"
    assert problem.value == metadata["parallelism"]
    assert "must not exceed 2,147,483,647" in problem.message
    assert "dp=65536" in problem.message and "tp=32768" in problem.message


def test_product_of_a_degree_beyond_64_bits_is_over_the_limit() -> None:
    problem = only_problem(loads('{"parallelism":{"dp":2,"pp":' + "9" * 40 + "}}"))
    assert "must not exceed 2,147,483,647" in problem.message


def test_product_over_limit_with_rank_count_given_reports_both_rules() -> None:
    metadata = {"shape": {"rankCount": 8}, "parallelism": {"dp": 65_536, "tp": 65_536}}
    messages = [p.message for p in problems(metadata)]
    assert len(messages) == 2
    assert any("must not exceed" in m for m in messages)
    assert any("must equal the product" in m for m in messages)


# -- null and absence -------------------------------------------------------------------


def test_null_shape_counts_as_absent() -> None:
    assert rank_count({"shape": None, "parallelism": {"dp": 4}}) == 4
    assert rank_count({"shape": None}, primary=False) is None


def test_null_parallelism_counts_as_absent() -> None:
    assert rank_count({"shape": {"rankCount": 8}, "parallelism": None}) == 8


def test_null_values_inside_count_as_absent() -> None:
    assert rank_count({"shape": {"rankCount": None}, "parallelism": {"dp": 4}}) == 4
    degrees: dict[str, Any] = {"dp": None, "tp": 2, "sp": None, "ep": None, "pp": None}
    assert rank_count({"shape": {"rankCount": 2}, "parallelism": degrees}) == 2


def test_null_workload_metadata_counts_as_absent() -> None:
    assert rank_count(None, primary=False) is None
    assert only_problem(None).message == MISSING_RANK_COUNT


def test_only_nulls_declare_nothing() -> None:
    metadata = {"shape": {"rankCount": None}, "parallelism": dict.fromkeys(["dp", "tp"])}
    assert only_problem(metadata).message == MISSING_RANK_COUNT


# -- what is not a declaration ----------------------------------------------------------


def test_primary_files_without_a_rank_count_give_the_documents_message() -> None:
    problem = only_problem({})
    assert problem.member == "workloadMetadata"
    assert problem.message == MISSING_RANK_COUNT


def test_rank_count_snake_case_is_not_a_declaration() -> None:
    assert only_problem({"shape": {"rank_count": 8}}).message == MISSING_RANK_COUNT
    assert rank_count({"shape": {"rank_count": 8}}, primary=False) is None


def test_rank_count_snake_case_is_not_checked_on_upload() -> None:
    assert rank_count({"shape": {"rankCount": 8, "rank_count": "not checked"}}) == 8


def test_parallelism_without_degrees_declares_nothing() -> None:
    for parallelism in ({}, {"cp": 2}, {"fsdp": 2, "cp": 4}, {"DP": 8, "tensor": 2}):
        assert only_problem({"parallelism": parallelism}).message == MISSING_RANK_COUNT
        assert rank_count({"parallelism": parallelism}, primary=False) is None


def test_parallelism_without_degrees_is_not_compared_with_rank_count() -> None:
    assert rank_count({"shape": {"rankCount": 8}, "parallelism": {"cp": 4}}) == 8


def test_cp_and_fsdp_not_checked_on_upload_and_not_factors() -> None:
    assert rank_count({"parallelism": {"dp": 2, "cp": 4, "fsdp": 2}}) == 2
    weird = {"dp": 8, "cp": "x", "fsdp": -3}
    assert rank_count({"shape": {"rankCount": 8}, "parallelism": weird}) == 8
    assert rank_count(loads('{"parallelism":{"dp":4,"cp":2.5,"fsdp":0}}')) == 4


def test_supporting_only_upload_needs_no_rank_count() -> None:
    supporting_only: list[Any] = [
        None,
        {},
        {"workload_family": "gpt"},
        {"shape": {}, "parallelism": {}},
    ]
    for metadata in supporting_only:
        assert rank_count(metadata, primary=False) is None


def test_supporting_only_upload_still_has_its_rank_count_checked() -> None:
    assert rank_count({"shape": {"rankCount": 16}}, primary=False) == 16
    problem = only_problem({"shape": {"rankCount": 0}}, primary=False)
    assert problem.member == "workloadMetadata.shape.rankCount"


# -- containers -------------------------------------------------------------------------


@pytest.mark.parametrize("literal", ["1", '"x"', "[]", "[{}]", "true", "false", "2.5"])
def test_workload_metadata_not_object_refused(literal: str) -> None:
    value = loads(literal)
    problem = only_problem(value)
    assert problem.member == "workloadMetadata"
    assert problem.value == value
    assert "workloadMetadata" in problem.message and literal in problem.message
    assert "object or null" in problem.message


@pytest.mark.parametrize("container", ["shape", "parallelism"])
@pytest.mark.parametrize("literal", ["4", '"x"', "[]", '[{"rankCount":4}]', "true", "0.5"])
def test_shape_and_parallelism_not_object_refused(container: str, literal: str) -> None:
    value = loads(literal)
    problem = only_problem({container: value})
    assert problem.member == f"workloadMetadata.{container}"
    assert problem.value == value
    assert container in problem.message and literal in problem.message


# -- every problem at once --------------------------------------------------------------


def test_every_problem_is_reported_at_once() -> None:
    metadata = loads(
        '{"shape":{"rankCount":0},'
        '"parallelism":{"dp":"2","tp":2.0,"sp":-1,"ep":true,"pp":2e0,"cp":"ignored"}}'
    )
    found = {p.member: p for p in problems(metadata)}
    assert list(found) == [
        "workloadMetadata.shape.rankCount",
        "workloadMetadata.parallelism.dp",
        "workloadMetadata.parallelism.tp",
        "workloadMetadata.parallelism.sp",
        "workloadMetadata.parallelism.ep",
        "workloadMetadata.parallelism.pp",
    ]
    assert found["workloadMetadata.parallelism.dp"].value == "2"
    assert found["workloadMetadata.parallelism.tp"].value == JsonNumber("2.0")
    assert found["workloadMetadata.parallelism.sp"].value == -1
    assert found["workloadMetadata.parallelism.ep"].value is True
    assert found["workloadMetadata.parallelism.pp"].value == JsonNumber("2e0")
    for member, problem in found.items():
        assert member.removeprefix("workloadMetadata.") in problem.message
        assert dumps(problem.value).decode() in problem.message


def test_shape_and_parallelism_both_not_objects_are_both_reported() -> None:
    members = [p.member for p in problems({"shape": 4, "parallelism": [2]})]
    assert members == ["workloadMetadata.shape", "workloadMetadata.parallelism"]


def test_rank_count_problems_and_size_are_reported_together() -> None:
    metadata = {"shape": {"rankCount": 0}, "note": "x" * 70_000}
    members = [p.member for p in problems(metadata)]
    assert members == ["workloadMetadata.shape.rankCount", "workloadMetadata"]


def test_missing_rank_count_and_size_are_reported_together() -> None:
    messages = [p.message for p in problems({"note": "x" * 70_000})]
    assert messages[0] == MISSING_RANK_COUNT
    assert "65,536 bytes" in messages[1]


# -- size -------------------------------------------------------------------------------


def metadata_of_size(size: int) -> dict[str, Any]:
    """Valid metadata whose compact UTF-8 JSON is ``size`` bytes, mostly two-byte "é"."""
    base = len(b'{"shape":{"rankCount":1},"note":""}')
    n, odd = divmod(size - base, 2)
    return {"shape": {"rankCount": 1}, "note": "é" * n + "a" * odd}


def test_metadata_of_exactly_65536_bytes_accepted() -> None:
    metadata = metadata_of_size(65_536)
    assert len(dumps(metadata)) == 65_536
    check = check_upload_metadata(metadata, has_primary_files=True)
    assert check.ok and check.rank_count == 1
    assert check.serialized == dumps(metadata)


def test_metadata_over_65536_bytes_refused() -> None:
    metadata = metadata_of_size(65_537)
    problem = only_problem(metadata)
    assert problem.member == "workloadMetadata"
    assert "65,536 bytes" in problem.message
    assert "65,537" in problem.message


def test_size_counts_utf8_bytes_not_characters() -> None:
    metadata = {"shape": {"rankCount": 1}, "note": "é" * 33_000}  # 33,000 chars, 66,000 bytes
    assert len(str(metadata)) < 65_536
    assert "65,536 bytes" in only_problem(metadata).message


def test_size_counts_non_ascii_unescaped() -> None:
    # Escaped as \u6771 each would be 6 bytes, and the whole over the limit.
    metadata = {"note": "東" * 21_000}
    assert len(dumps(metadata)) == 63_011
    assert rank_count(metadata, primary=False) is None


def test_metadata_with_a_lone_surrogate_is_refused_not_raised() -> None:
    problem = only_problem({"shape": {"rankCount": 1}, "note": "\ud800"})
    assert problem.member == "workloadMetadata"
    assert "UTF-8" in problem.message


# -- stored as given --------------------------------------------------------------------


def test_the_whole_object_is_stored_as_given() -> None:
    text = (
        '{"workload_name":"llama ✓ 東京","workloadFamily":"gpt","shape":{"rankCount":8,'
        '"seq":0.1000000000000000000001,"ratio":2.0,"big":' + "9" * 40 + ',"neg":-0},'
        '"parallelism":{"dp":8,"cp":null},"zeta":[1,{"b":true,"a":false}],"alpha":"é\\n"}'
    )
    check = check_upload_metadata(loads(text), has_primary_files=True)
    assert check.ok and check.rank_count == 8
    assert check.serialized == text.encode()


def test_absent_metadata_stores_nothing() -> None:
    check = check_upload_metadata(None, has_primary_files=False)
    assert check.ok and check.serialized is None and check.rank_count is None


def test_check_rank_count_alone_does_not_serialize() -> None:
    check = check_rank_count({"shape": {"rankCount": 4}}, has_primary_files=True)
    assert check.ok and check.rank_count == 4 and check.serialized is None


# -- never raises -----------------------------------------------------------------------


def test_a_value_nested_too_deeply_to_write_is_a_problem_not_an_exception() -> None:
    deep: list[Any] = []
    for _ in range(5_000):
        deep = [deep]
    shape, size = problems({"shape": deep})
    assert shape.member == "workloadMetadata.shape"
    assert "too deeply" in shape.message
    assert size.member == "workloadMetadata"
    check = check_rank_count({"shape": {"rankCount": 1}, "note": deep}, has_primary_files=True)
    assert check.ok and check.rank_count == 1
    assert problems({"shape": {"rankCount": 1}, "note": deep}, primary=False)


def test_long_values_are_shortened_in_messages_but_kept_in_the_problem() -> None:
    huge = loads("9" * 5000)
    check = check_rank_count({"shape": {"rankCount": huge}}, has_primary_files=True)
    [problem] = check.problems
    assert problem.value == huge
    assert "(5,000 characters)" in problem.message and len(problem.message) < 200
