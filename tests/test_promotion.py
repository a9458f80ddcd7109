"""Promotion's checks, one test per rule of the contract's promote route.

``seed/workload-metadata.txt`` is the law and ``api-contract.md`` numbers the checks:
(1) the upload rules again, (2) the rank-count guard, (3) a parallelism without degrees,
(4) cp and fsdp, (5) shape.rank_count, (6) the typed descriptive members; warnings name
descriptive members promotion does not read because of their spelling.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.jsonvalues import json_values, same_json, texts
from tracesets.jsontext import JsonNumber, dumps, loads
from tracesets.problems import Problem
from tracesets.promotion import PromotionCheck, check_promotion
from tracesets.workload import MISSING_RANK_COUNT, check_rank_count, check_upload_metadata

NOT_WHOLE_NUMBERS = [0, -1, JsonNumber("2.0"), JsonNumber("2e0"), "2", True, False, [2], {}]
DESCRIPTIVE_STRINGS = ["workload_family", "workload_name", "precision", "accelerator"]
DESCRIPTIVE_COUNTS = ["global_batch_size", "micro_batch_size", "sequence_length"]


def check(metadata: Any, *, stored: int | None, primary: bool = True) -> PromotionCheck:
    return check_promotion(metadata, stored_rank_count=stored, has_primary_files=primary)


def promoted(metadata: Any, *, stored: int | None, primary: bool = True) -> PromotionCheck:
    """The check of metadata every rule accepts (fails the test otherwise)."""
    result = check(metadata, stored=stored, primary=primary)
    assert result.problems == []
    assert result.ok
    return result


def problems(metadata: Any, *, stored: int | None, primary: bool = True) -> list[Problem]:
    """The problems of metadata some rule refuses (fails the test if none does)."""
    result = check(metadata, stored=stored, primary=primary)
    assert result.problems, f"accepted: {metadata!r}"
    assert result.serialized is None
    return result.problems


def only_problem(metadata: Any, *, stored: int | None, primary: bool = True) -> Problem:
    found = problems(metadata, stored=stored, primary=primary)
    assert len(found) == 1, found
    return found[0]


def with_rank_count(count: int, **members: Any) -> dict[str, Any]:
    """Metadata declaring ``count`` through shape.rankCount, plus the members given."""
    shape = {"rankCount": count, **members.pop("shape", {})}
    return {"shape": shape, **members}


# -- (1) the upload rules, with the same messages ----------------------------------------


@pytest.mark.parametrize(
    "metadata",
    [
        {"shape": {"rankCount": JsonNumber("2.0")}},
        {"shape": {"rankCount": "4"}, "parallelism": {"dp": 0, "tp": True}},
        {"shape": {"rankCount": 6}, "parallelism": {"dp": 2, "tp": 4}},
        {"shape": {"rankCount": 2_147_483_648}},
        {"parallelism": {"dp": 65_536, "tp": 65_536}},
        {"shape": [], "parallelism": "dp=2"},
        {"shape": {"rankCount": 4}, "notes": "x" * 70_000},
        [{"shape": {"rankCount": 4}}],
    ],
)
def test_upload_rules_apply_again_with_same_messages(metadata: Any) -> None:
    upload = check_upload_metadata(metadata, has_primary_files=True).problems
    assert upload
    found = problems(metadata, stored=4)
    assert found[: len(upload)] == upload


def test_missing_declaration_with_primary_files_gets_the_documents_message() -> None:
    # Only reachable for a traceset holding no rank count although it has primary files.
    assert only_problem({}, stored=None).message == MISSING_RANK_COUNT


def test_missing_declaration_reported_once_when_a_count_is_held() -> None:
    problem = only_problem({"parallelism": None}, stored=256)
    assert problem.member == "workloadMetadata"
    assert "cannot be changed after upload" in problem.message
    assert "256" in problem.message


def test_supporting_only_traceset_without_rank_count_promotes() -> None:
    promoted({"workload_family": "gpt"}, stored=None, primary=False)


def test_null_metadata_promotes_and_stores_nothing() -> None:
    assert promoted(None, stored=None, primary=False).serialized is None


def test_null_metadata_refused_when_a_count_is_held() -> None:
    assert "holds 8" in only_problem(None, stored=8).message


def test_metadata_over_65536_bytes_refused() -> None:
    problem = only_problem(with_rank_count(4, notes="x" * 70_000), stored=4)
    assert problem.message.startswith("workloadMetadata must be at most 65,536 bytes")


# -- (2) the rank-count guard ------------------------------------------------------------


@pytest.mark.parametrize(
    "metadata",
    [
        {"shape": {"rankCount": 256}},
        {"parallelism": {"dp": 32, "tp": 8}},
        {"parallelism": {"dp": 32, "tp": 8, "pp": 1}, "shape": {"rankCount": 256}},
    ],
)
def test_guard_accepts_the_rank_count_held(metadata: Any) -> None:
    promoted(metadata, stored=256)


def test_guard_refuses_a_changed_rank_count() -> None:
    problem = only_problem({"shape": {"rankCount": 512}}, stored=256)
    assert problem == Problem(
        "workloadMetadata.shape.rankCount",
        512,
        "A rank count cannot be changed after upload: workloadMetadata declares a rank count "
        "of 512, and the traceset holds 256",
    )


def test_guard_refuses_a_changed_parallelism_product() -> None:
    problem = only_problem({"parallelism": {"dp": 2, "tp": 8}}, stored=8)
    assert problem.member == "workloadMetadata.parallelism"
    assert problem.value == {"dp": 2, "tp": 8}
    assert "declares a rank count of 16, and the traceset holds 8" in problem.message


def test_guard_refuses_declaring_a_count_when_none_is_held() -> None:
    problem = only_problem({"shape": {"rankCount": 4}}, stored=None, primary=False)
    assert problem.member == "workloadMetadata.shape.rankCount"
    assert problem.message.startswith("A rank count cannot be changed after upload")
    assert "declares a rank count of 4, and the traceset holds none" in problem.message


def test_guard_refuses_declaring_nothing_when_a_count_is_held() -> None:
    problem = only_problem({"workload_family": "gpt"}, stored=64, primary=False)
    assert problem.member == "workloadMetadata"
    assert "declares no rank count, and the traceset holds 64" in problem.message


def test_shape_rank_count_snake_is_not_a_declaration_for_the_guard() -> None:
    problem = only_problem({"shape": {"rank_count": 256}}, stored=256)
    assert "declares no rank count" in problem.message
    promoted({"shape": {"rank_count": 256}}, stored=None, primary=False)


def test_nulls_declare_nothing_for_the_guard() -> None:
    metadata = {"shape": {"rankCount": None}, "parallelism": {"dp": None, "tp": 1}}
    promoted({"shape": {"rankCount": None}, "parallelism": None}, stored=None, primary=False)
    promoted(metadata, stored=1)


def test_guard_is_silent_when_the_declaration_itself_is_faulty() -> None:
    problem = only_problem({"shape": {"rankCount": JsonNumber("256.0")}}, stored=256)
    assert problem.message.endswith("must be a whole number of at least 1; got 256.0")


# -- (3) a parallelism without degrees ---------------------------------------------------


@pytest.mark.parametrize("parallelism", [{}, {"cp": 2}, {"dp": None, "pp": None}])
def test_parallelism_without_degrees_refused(parallelism: dict[str, Any]) -> None:
    problem = only_problem(with_rank_count(2, parallelism=parallelism), stored=2)
    assert problem == Problem(
        "workloadMetadata.parallelism",
        parallelism,
        "A parallelism object that holds none of dp, tp, sp, ep and pp declares nothing, and "
        "promotion refuses such a parallelism",
    )


def test_null_parallelism_is_absent_not_refused() -> None:
    promoted(with_rank_count(2, parallelism=None), stored=2)


# -- (4) cp and fsdp ---------------------------------------------------------------------


def test_whole_cp_and_fsdp_dividing_dp_accepted() -> None:
    promoted({"parallelism": {"dp": 8, "tp": 2, "cp": 4, "fsdp": 4}}, stored=16)


def test_cp_2_0_refused() -> None:
    problem = only_problem({"parallelism": {"dp": 2, "cp": JsonNumber("2.0")}}, stored=2)
    assert problem == Problem(
        "workloadMetadata.parallelism.cp",
        JsonNumber("2.0"),
        "workloadMetadata.parallelism.cp must be a whole number of at least 1; got 2.0",
    )


@pytest.mark.parametrize("name", ["cp", "fsdp"])
@pytest.mark.parametrize("value", NOT_WHOLE_NUMBERS, ids=repr)
def test_cp_and_fsdp_must_be_whole_numbers_of_at_least_1(name: str, value: Any) -> None:
    problem = only_problem({"parallelism": {"dp": 4, name: value}}, stored=4)
    assert problem.member == f"workloadMetadata.parallelism.{name}"
    assert problem.value is value


def test_null_cp_and_fsdp_are_absent() -> None:
    promoted({"parallelism": {"dp": 3, "cp": None, "fsdp": None}}, stored=3)


def test_cp_and_fsdp_are_not_factors() -> None:
    promoted({"parallelism": {"dp": 4, "cp": 3, "fsdp": 2}, "shape": {"rankCount": 4}}, stored=4)


def test_fsdp_must_divide_dp() -> None:
    problem = only_problem({"parallelism": {"dp": 8, "fsdp": 3}}, stored=8)
    assert problem == Problem(
        "workloadMetadata.parallelism.fsdp",
        3,
        "parallelism.fsdp must divide parallelism.dp: fsdp is 3, dp is 8",
    )
    promoted({"parallelism": {"dp": 8, "fsdp": 8}}, stored=8)


def test_fsdp_absent_dp_counts_as_1() -> None:
    problem = only_problem({"parallelism": {"tp": 4, "fsdp": 2}}, stored=4)
    assert problem.message.endswith("fsdp is 2, dp is absent and counts as 1")
    promoted({"parallelism": {"tp": 4, "dp": None, "fsdp": 1}}, stored=4)


def test_fsdp_beyond_64_bits_does_not_divide_dp() -> None:
    fsdp = JsonNumber(str(2**70))
    assert only_problem({"parallelism": {"dp": 8, "fsdp": fsdp}}, stored=8).value is fsdp


def test_fsdp_is_not_compared_with_a_faulty_dp() -> None:
    problem = only_problem({"parallelism": {"dp": JsonNumber("8.0"), "fsdp": 3}}, stored=8)
    assert problem.member == "workloadMetadata.parallelism.dp"


# -- (5) shape.rank_count ----------------------------------------------------------------


def test_shape_rank_count_equal_to_the_declaration_accepted() -> None:
    promoted({"parallelism": {"dp": 4, "tp": 2}, "shape": {"rank_count": 8}}, stored=8)
    promoted({"shape": {"rankCount": 8, "rank_count": 8}}, stored=8)


def test_shape_rank_count_must_equal_product() -> None:
    metadata = {"parallelism": {"dp": 4, "tp": 2}, "shape": {"rank_count": 6}}
    assert only_problem(metadata, stored=8) == Problem(
        "workloadMetadata.shape.rank_count",
        6,
        "workloadMetadata.shape.rank_count must equal the parallelism product: "
        "shape.rank_count is 6, the product dp=4 × tp=2 is 8",
    )


def test_shape_rank_count_must_equal_rank_count_without_degrees() -> None:
    problem = only_problem({"shape": {"rankCount": 8, "rank_count": 16}}, stored=8)
    assert problem.message.endswith("shape.rank_count is 16, shape.rankCount is 8")


def test_shape_rank_count_beyond_64_bits_is_not_the_product() -> None:
    huge = JsonNumber(str(2**64))
    assert only_problem({"shape": {"rankCount": 8, "rank_count": huge}}, stored=8).value is huge


def test_shape_rank_count_alone_need_only_be_a_whole_number() -> None:
    promoted({"shape": {"rank_count": 7}}, stored=None, primary=False)


@pytest.mark.parametrize("value", NOT_WHOLE_NUMBERS, ids=repr)
def test_shape_rank_count_must_be_a_whole_number_of_at_least_1(value: Any) -> None:
    problem = only_problem({"shape": {"rankCount": 4, "rank_count": value}}, stored=4)
    assert problem.member == "workloadMetadata.shape.rank_count"
    assert "must be a whole number of at least 1" in problem.message


def test_null_shape_rank_count_is_absent() -> None:
    promoted({"shape": {"rankCount": 4, "rank_count": None}}, stored=4)


# -- (6) the typed descriptive members ---------------------------------------------------


def test_descriptive_strings_typed() -> None:
    metadata = with_rank_count(1, **{name: "any text ✓" for name in DESCRIPTIVE_STRINGS})
    promoted(metadata, stored=1)
    for name in DESCRIPTIVE_STRINGS:
        for value in [5, True, JsonNumber("1.5"), ["gpt"], {"name": "gpt"}]:
            problem = only_problem(with_rank_count(1, **{name: value}), stored=1)
            assert problem.member == f"workloadMetadata.{name}"
            assert problem.value is value
            assert "must be a string" in problem.message


def test_global_batch_size_string_512_refused() -> None:
    problem = only_problem(with_rank_count(1, shape={"global_batch_size": "512"}), stored=1)
    assert problem == Problem(
        "workloadMetadata.shape.global_batch_size",
        "512",
        'workloadMetadata.shape.global_batch_size must be a whole number of at least 1; got "512"',
    )


@pytest.mark.parametrize("name", DESCRIPTIVE_COUNTS)
@pytest.mark.parametrize(
    "value",
    [JsonNumber("512.0"), JsonNumber("5.12e2"), True, 0, -1, JsonNumber("-0"), "512", [512]],
    ids=repr,
)
def test_descriptive_counts_must_be_whole_numbers_of_at_least_1(name: str, value: Any) -> None:
    problem = only_problem(with_rank_count(1, shape={name: value}), stored=1)
    assert problem.member == f"workloadMetadata.shape.{name}"
    assert problem.value is value  # as given, not as converted for the model
    assert "must be a whole number of at least 1" in problem.message


def test_descriptive_counts_accept_whole_numbers_of_any_size() -> None:
    for value in [1, 512, 2**64 - 1, JsonNumber(str(2**64)), JsonNumber("9" * 5000)]:
        promoted(with_rank_count(1, shape={name: value for name in DESCRIPTIVE_COUNTS}), stored=1)
    negative = JsonNumber("-" + "9" * 5000)
    assert only_problem(with_rank_count(1, shape={"sequence_length": negative}), stored=1)


def test_null_descriptive_members_are_absent() -> None:
    nulls = {name: None for name in DESCRIPTIVE_STRINGS}
    promoted(with_rank_count(1, shape=dict.fromkeys(DESCRIPTIVE_COUNTS), **nulls), stored=1)


def test_other_members_pass_through() -> None:
    metadata = {
        "workload_family": "gpt",
        "shape": {"rankCount": 2, "hidden_size": JsonNumber("0.1000000000000000000001")},
        "parallelism": {"dp": 2, "zero_stage": "3", "extra": [None, True, {"k": []}]},
        "optimizer": {"name": "adam", "betas": [JsonNumber("0.9"), JsonNumber("0.95")]},
        "workload_family_notes": 5,
        "Ünïcode": "✓",
    }
    result = promoted(metadata, stored=2)
    assert result.serialized == dumps(metadata)
    assert same_json(loads(result.serialized), metadata)


def test_descriptive_members_of_another_spelling_are_not_typed() -> None:
    result = promoted(
        with_rank_count(1, workloadFamily=5, shape={"globalBatchSize": "x"}), stored=1
    )
    assert len(result.warnings) == 2


# -- warnings ----------------------------------------------------------------------------


def test_camel_case_descriptive_members_warn() -> None:
    metadata = with_rank_count(
        1,
        workloadFamily="gpt",
        workloadName="gpt-7b",
        shape={"globalBatchSize": 512, "microBatchSize": 4, "sequenceLength": 2048},
    )
    assert promoted(metadata, stored=1).warnings == [
        "workloadMetadata.workloadFamily is not read: promotion reads workload_family",
        "workloadMetadata.workloadName is not read: promotion reads workload_name",
        "workloadMetadata.shape.globalBatchSize is not read: promotion reads global_batch_size",
        "workloadMetadata.shape.microBatchSize is not read: promotion reads micro_batch_size",
        "workloadMetadata.shape.sequenceLength is not read: promotion reads sequence_length",
    ]


def test_other_spellings_of_descriptive_members_warn_too() -> None:
    metadata = with_rank_count(1, Precision="bf16", **{"workload-family": "gpt"})
    assert promoted(metadata, stored=1).warnings == [
        "workloadMetadata.Precision is not read: promotion reads precision",
        "workloadMetadata.workload-family is not read: promotion reads workload_family",
    ]


def test_a_warned_member_warns_beside_its_snake_case_spelling() -> None:
    metadata = with_rank_count(1, workload_family="gpt", workloadFamily="gpt")
    assert len(promoted(metadata, stored=1).warnings) == 1


def test_rank_count_spellings_do_not_warn() -> None:
    metadata = {"shape": {"rankCount": 4, "rank_count": 4}, "parallelism": {"dp": 4}}
    assert promoted(metadata, stored=4).warnings == []


def test_snake_case_and_null_members_do_not_warn() -> None:
    metadata = with_rank_count(1, workload_family="gpt", workloadName=None, shape={"seqLen": 2})
    assert promoted(metadata, stored=1).warnings == []


def test_warnings_come_with_problems_too() -> None:
    result = check({"workloadFamily": "gpt", "shape": {"rankCount": 3}}, stored=4)
    assert result.problems and result.warnings


# -- all together ------------------------------------------------------------------------


def test_every_problem_reported_at_once() -> None:
    metadata = {
        "shape": {"rankCount": 16, "rank_count": 12, "global_batch_size": "512"},
        "parallelism": {"dp": 8, "tp": 2, "cp": JsonNumber("2.0"), "fsdp": 3},
        "workload_family": 7,
        "workloadName": "gpt",
    }
    result = check(metadata, stored=8)
    assert [problem.member for problem in result.problems] == [
        "workloadMetadata.shape.rankCount",  # the guard
        "workloadMetadata.parallelism.cp",
        "workloadMetadata.parallelism.fsdp",
        "workloadMetadata.shape.rank_count",
        "workloadMetadata.workload_family",
        "workloadMetadata.shape.global_batch_size",
    ]
    assert result.warnings == [
        "workloadMetadata.workloadName is not read: promotion reads workload_name"
    ]


def test_upload_problems_and_promotion_problems_are_reported_together() -> None:
    metadata = {"shape": {"rankCount": 0}, "parallelism": {}, "precision": 16}
    members = [problem.member for problem in problems(metadata, stored=4)]
    assert members == [
        "workloadMetadata.shape.rankCount",
        "workloadMetadata.parallelism",
        "workloadMetadata.precision",
    ]


def test_the_documents_example_promotes_as_given() -> None:
    metadata = {"parallelism": {"dp": 32, "tp": 8, "pp": 1}, "shape": {"rankCount": 256}}
    assert promoted(metadata, stored=256).serialized == (
        b'{"parallelism":{"dp":32,"tp":8,"pp":1},"shape":{"rankCount":256}}'
    )


# -- properties --------------------------------------------------------------------------

READ_NAMES = [
    "shape",
    "parallelism",
    "rankCount",
    "rank_count",
    *("dp", "tp", "sp", "ep", "pp", "cp", "fsdp"),
    *DESCRIPTIVE_STRINGS,
    *DESCRIPTIVE_COUNTS,
    *("workloadFamily", "globalBatchSize"),
]
member_values = st.one_of(st.integers(-2, 9), json_values)
containers = st.dictionaries(
    st.one_of(st.sampled_from(READ_NAMES), texts), member_values, max_size=6
)
metadata_like = st.one_of(
    json_values,
    st.dictionaries(
        st.one_of(st.sampled_from(READ_NAMES), texts),
        st.one_of(containers, member_values),
        max_size=6,
    ),
)


@settings(max_examples=400)
@given(metadata_like, st.one_of(st.none(), st.integers(1, 100)), st.booleans(), st.booleans())
def test_never_raises_and_what_passes_round_trips(
    metadata: Any, other_count: int | None, primary: bool, hold_the_declared_count: bool
) -> None:
    declared = check_rank_count(metadata, has_primary_files=False)
    stored = declared.rank_count if hold_the_declared_count and declared.ok else other_count
    result = check(metadata, stored=stored, primary=primary)
    assert all(isinstance(problem, Problem) for problem in result.problems)
    assert all(isinstance(warning, str) for warning in result.warnings)
    if result.ok and metadata is not None:
        assert check_upload_metadata(metadata, has_primary_files=False).ok
        assert result.serialized is not None
        assert same_json(loads(result.serialized), metadata)


positive = st.one_of(st.integers(1, 2**64 - 1), st.integers(2**64, 2**200).map(str).map(JsonNumber))


def letters(name: str) -> str:
    return name.replace("_", "").replace("-", "").lower()


#: Member names no rule reads, in no spelling.
extra_keys = texts.filter(lambda key: letters(key) not in {letters(n) for n in READ_NAMES})


@st.composite
def valid_metadata(draw: st.DrawFn) -> Any:
    degrees = draw(
        st.dictionaries(st.sampled_from(["dp", "tp", "sp", "ep", "pp"]), st.integers(1, 8))
    )
    product = 1
    for degree in degrees.values():
        product *= degree
    parallelism: dict[str, Any] = dict(degrees)
    if degrees:
        dp = degrees.get("dp", 1)
        parallelism["fsdp"] = draw(st.sampled_from([d for d in range(1, dp + 1) if dp % d == 0]))
        parallelism["cp"] = draw(positive)
    shape: dict[str, Any] = {"rankCount": product} if draw(st.booleans()) or not degrees else {}
    shape["rank_count"] = product
    shape.update(
        draw(st.fixed_dictionaries({}, optional=dict.fromkeys(DESCRIPTIVE_COUNTS, positive)))
    )
    shape.update(draw(st.dictionaries(extra_keys, json_values, max_size=3)))
    metadata: dict[str, Any] = {"shape": shape}
    if parallelism:
        metadata["parallelism"] = parallelism
    metadata.update(
        draw(st.fixed_dictionaries({}, optional=dict.fromkeys(DESCRIPTIVE_STRINGS, texts)))
    )
    metadata.update(draw(st.dictionaries(extra_keys, json_values, max_size=3)))
    return metadata


@given(valid_metadata())
def test_valid_metadata_promotes_and_round_trips(metadata: Any) -> None:
    stored = check_rank_count(metadata, has_primary_files=True).rank_count
    result = promoted(metadata, stored=stored)
    assert result.warnings == []
    assert result.serialized is not None
    assert same_json(loads(result.serialized), metadata)
