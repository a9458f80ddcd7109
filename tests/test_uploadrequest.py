"""The upload-url request body: each rule of the contract, every problem at once."""

from __future__ import annotations

import copy
import unicodedata
from typing import Any

import pytest

from tracesets.filenames import file_name_problem, same_name_key
from tracesets.jsontext import JsonNumber, loads
from tracesets.problems import InvalidRequest, Problem
from tracesets.uploadrequest import (
    FileSpec,
    UploadRequest,
    read_upload_request,
)

TIB = 1024**4
MISSING_RANK_COUNT = (
    "Uploads with primary trace files must declare a rank count: set "
    "workloadMetadata.shape.rankCount, or workloadMetadata.parallelism degrees "
    "(dp, tp, sp, ep, pp)"
)
EXAMPLE: dict[str, Any] = {
    "name": "GPT training, 256 ranks",
    "files": [{"name": "traces.zip", "size": 1_048_576, "role": "primary"}],
    "workloadMetadata": {
        "parallelism": {"dp": 32, "tp": 8, "pp": 1},
        "shape": {"rankCount": 256},
    },
}


def body(**members: Any) -> dict[str, Any]:
    """The contract's example request with some members replaced."""
    result = copy.deepcopy(EXAMPLE)
    result.update(members)
    return result


def with_file(**members: Any) -> dict[str, Any]:
    """The example request with its one file's members replaced."""
    return body(files=[{"name": "traces.zip", "size": 1, "role": "primary", **members}])


def without(request: dict[str, Any], member: str) -> dict[str, Any]:
    return {k: v for k, v in request.items() if k != member}


def read(request: Any) -> UploadRequest:
    return read_upload_request(request)


def problems(request: Any) -> list[Problem]:
    with pytest.raises(InvalidRequest) as caught:
        read_upload_request(request)
    error = caught.value
    assert error.status == 400
    assert error.problems
    assert error.detail == error.problems[0].message
    return error.problems


def only_problem(request: Any) -> Problem:
    found = problems(request)
    assert len(found) == 1, found
    return found[0]


def files(*names: str, role: str = "supporting") -> list[dict[str, Any]]:
    return [{"name": name, "size": 0, "role": role} for name in names]


# -- the contract's example -------------------------------------------------------------


def test_the_contracts_example_is_read_whole() -> None:
    request = read(
        body(
            description="optional text",
            files=[
                {"name": "traces.zip", "size": 1_048_576, "role": "primary", "sha256": "ab" * 32},
                {"name": "logs/rank0.txt", "size": 0, "role": "supporting", "sha256": None},
            ],
        )
    )
    assert request.name == "GPT training, 256 ranks"
    assert request.description == "optional text"
    assert request.files == [
        FileSpec("traces.zip", 1_048_576, "primary", "ab" * 32),
        FileSpec("logs/rank0.txt", 0, "supporting", None),
    ]
    assert request.rank_count == 256
    assert request.workload_metadata == (
        b'{"parallelism":{"dp":32,"tp":8,"pp":1},"shape":{"rankCount":256}}'
    )


def test_workload_metadata_may_be_absent_or_null_without_primary_files() -> None:
    for request in (
        without(body(files=files("a.log")), "workloadMetadata"),
        body(files=files("a.log"), workloadMetadata=None),
    ):
        read_request = read(request)
        assert read_request.workload_metadata is None
        assert read_request.rank_count is None


def test_description_is_optional_and_may_be_null() -> None:
    assert read(EXAMPLE).description is None
    assert read(body(description=None)).description is None


def test_description_must_be_a_string() -> None:
    assert only_problem(body(description=5)).member == "description"


# -- name -------------------------------------------------------------------------------


def test_name_of_1_character_accepted() -> None:
    assert read(body(name="x")).name == "x"


def test_name_of_256_characters_accepted() -> None:
    assert read(body(name="é" * 256)).name == "é" * 256


@pytest.mark.parametrize("name", ["", "x" * 257, 5, None, ["x"], True])
def test_name_must_be_1_to_256_characters(name: Any) -> None:
    problem = only_problem(body(name=name))
    assert problem.member == "name"
    assert problem.value == name
    assert "name" in problem.message and "1 to 256" in problem.message


def test_name_is_required() -> None:
    assert only_problem(without(EXAMPLE, "name")).member == "name"


# -- files ------------------------------------------------------------------------------


def test_files_must_list_at_least_1_file() -> None:
    problem = only_problem(body(files=[]))
    assert problem.member == "files"
    assert "1 to 10,000" in problem.message


def test_10000_files_accepted() -> None:
    names = [f"rank{i}.log" for i in range(10_000)]
    assert len(read(body(files=files(*names), workloadMetadata=None)).files) == 10_000


def test_10001_files_refused() -> None:
    names = [f"rank{i}.log" for i in range(10_001)]
    problem = only_problem(body(files=files(*names), workloadMetadata=None))
    assert problem.member == "files"
    assert "10,001" in problem.message


@pytest.mark.parametrize("value", [None, {}, "traces.zip", 1])
def test_files_must_be_an_array(value: Any) -> None:
    problem = only_problem(body(files=value, workloadMetadata=None))
    assert problem.member == "files"
    assert problem.value == value


def test_files_are_required() -> None:
    assert [p.member for p in problems(without(EXAMPLE, "files"))] == ["files"]


@pytest.mark.parametrize("entry", [None, "traces.zip", 1, ["traces.zip", 1, "primary"]])
def test_each_file_must_be_an_object(entry: Any) -> None:
    problem = only_problem(body(files=[entry], workloadMetadata=None))
    assert problem.member == "files[0]"
    assert problem.value == entry


def test_file_names_must_be_unique() -> None:
    problem = only_problem(body(files=files("a.log", "b.log", "a.log")))
    assert problem.member == "files[2].name"
    assert problem.value == "a.log"
    assert "a.log" in problem.message and "twice" in problem.message


def test_file_names_differing_only_in_case_are_one_name() -> None:
    # One would overwrite the other when downloaded to macOS or Windows.
    problem = only_problem(body(files=files("logs/Rank0.log", "b.log", "LOGS/rank0.LOG")))
    assert problem.member == "files[2].name"
    assert problem.value == "LOGS/rank0.LOG"
    assert problem.message == (
        'files[2].name "LOGS/rank0.LOG" differs only in case from files[0].name '
        '"logs/Rank0.log": the two would be one file on macOS and Windows'
    )


def test_caseless_matching_covers_more_than_ascii() -> None:
    assert only_problem(body(files=files("ÉTÉ.log", "été.log"))).member == "files[1].name"
    assert only_problem(body(files=files("ΣΟΦΙΑ.txt", "σοφια.txt"))).member == "files[1].name"


def test_names_differing_beyond_case_are_different() -> None:
    names = ("rank0.log", "rank1.log", "Rank0/a.log", "rank0/b.log", "cafe.log", "café.log")
    assert [f.name for f in read(body(files=files(*names))).files] == list(names)


def test_names_equal_after_nfc_normalization_are_one_name() -> None:
    composed, decomposed = "caf\u00e9.json", "cafe\u0301.json"
    assert composed != decomposed
    problem = only_problem(body(files=files(composed, decomposed)))
    assert problem.member == "files[1].name"
    assert problem.value == decomposed
    assert problem.message == (
        f'files[1].name "{decomposed}" is the same name as files[0].name "{composed}" once '
        "Unicode-normalized (NFC)"
    )


def test_a_name_is_stored_in_the_form_given() -> None:
    decomposed = "cafe\u0301/trace.json"
    assert read(with_file(name=decomposed)).files[0].name == decomposed


def test_a_repeated_name_is_reported_along_with_the_entrys_other_problems() -> None:
    entries = [
        {"name": "a.log", "size": 0, "role": "supporting"},
        {"name": "a.log", "size": -1, "role": "supporting"},
    ]
    members = [p.member for p in problems(body(files=entries))]
    assert members == ["files[1].size", "files[1].name"]


# -- relative paths ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "traces.zip",
        "rank0/trace.json",
        "a/b/c/d.txt",
        "..x",
        "x..",
        "a..b/c",
        ".hidden",
        "東京.log",
        "...",
        "a/.b/c.",
        "rank:0.json",
        "ab:/x",
        "1:x",
    ],
)
def test_a_relative_path_is_a_file_name(name: str) -> None:
    assert read(with_file(name=name)).files[0].name == name


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("/traces.zip", "leading /"),
        ("/", "leading /"),
        ("..", ".."),
        ("../traces.zip", ".."),
        ("a/../../etc/passwd", ".."),
        ("a/..", ".."),
        ("a\\b", "backslash"),
        ("..\\x", "backslash"),
        ("a\x00b", "NUL"),
        ("x" * 1025, "1,024 bytes"),
        ("", "empty"),
        ("a//b", "empty segment"),
        ("a/", "empty segment"),
        ("a/./b", ". segment"),
        ("./a/b", ". segment"),
        ("a/.", ". segment"),
        ("C:/x", "drive such as C:"),
        ("C:x", "drive such as C:"),
        ("c:", "drive such as C:"),
    ],
    ids=[
        "leading-slash",
        "root",
        "dotdot",
        "dotdot-first",
        "dotdot-middle",
        "dotdot-last",
        "backslash",
        "backslash-dotdot",
        "nul",
        "1025-bytes",
        "empty",
        "double-slash",
        "trailing-slash",
        "dot-middle",
        "dot-first",
        "dot-last",
        "drive-root",
        "drive-relative",
        "drive-alone",
    ],
)
def test_a_file_name_must_be_a_safe_relative_path(name: str, why: str) -> None:
    problem = only_problem(with_file(name=name))
    assert problem.member == "files[0].name"
    assert problem.value == name
    assert why in problem.message


@pytest.mark.parametrize(
    ("name", "code"),
    [
        ("a\nb.json", "U+000A at character 2"),
        ("a.json\r", "U+000D at character 7"),
        ("\ta.json", "U+0009 at character 1"),
        ("a\x1bb", "U+001B at character 2"),
        ("a\x7fb", "U+007F at character 2"),
        ("a\x85b", "U+0085 at character 2"),
        ("a\x9fb", "U+009F at character 2"),
    ],
    ids=["newline", "return", "tab", "escape", "del", "c1-next-line", "c1-last"],
)
def test_a_file_name_must_not_hold_control_characters(name: str, code: str) -> None:
    problem = only_problem(with_file(name=name))
    assert (problem.member, problem.value) == ("files[0].name", name)
    assert problem.message == (
        f"files[0].name must not contain control characters (line breaks, tabs, DEL…); {code} "
        "is one"
    )


@pytest.mark.parametrize(
    "code",
    [
        0x202A,
        0x202B,
        0x202C,
        0x202D,
        0x202E,
        0x2066,
        0x2067,
        0x2068,
        0x2069,
        0x200E,
        0x200F,
        0x061C,
    ],
)
def test_a_file_name_must_not_hold_bidi_controls(code: int) -> None:
    name = f"rank0{chr(code)}nosj.exe"
    problem = only_problem(with_file(name=name))
    assert (problem.member, problem.value) == ("files[0].name", name)
    assert problem.message == (
        "files[0].name must not contain bidirectional formatting characters, which make a name "
        f"display as another; U+{code:04X} at character 6 is one"
    )


@pytest.mark.parametrize(
    "code",
    [0x00AD, 0x200B, 0x2060, 0x2062, 0xFEFF, 0xFFF9, 0x180E, 0xE0041, 0x2028, 0x2029],
    ids=[
        "soft-hyphen",
        "zero-width-space",
        "word-joiner",
        "invisible-times",
        "byte-order-mark",
        "interlinear-anchor",
        "mongolian-vowel-separator",
        "tag-a",
        "line-separator",
        "paragraph-separator",
    ],
)
def test_a_file_name_must_not_hold_invisible_format_characters(code: int) -> None:
    name = f"a{chr(code)}b.json"
    problem = only_problem(with_file(name=name))
    assert problem.message == (
        f"files[0].name must not contain invisible formatting characters; U+{code:04X} at "
        "character 2 is one"
    )


@pytest.mark.parametrize(
    "name",
    [
        "\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645.json",
        "\U0001f469\u200d\U0001f52c.txt",
        "a b.json",
        "\u00a0.log",
    ],
    ids=["persian-zwnj", "emoji-zwj", "space", "no-break-space"],
)
def test_joiners_and_visible_spaces_are_allowed(name: str) -> None:
    assert read(with_file(name=name)).files[0].name == name


def test_every_character_is_refused_in_a_name_exactly_when_the_rule_names_it() -> None:
    """Each code point, read by the rule as written (its Unicode category, the
    bidirectional controls, the two joiners kept), against what the file-name check says:
    the check's shortcuts (a printable name passed at once) refuse and pass the same."""
    bidi = {0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)}
    refused, differ = 0, []
    for code in range(0x110000):
        if 0xD800 <= code <= 0xDFFF:  # lone surrogates: refused as not Unicode, before
            continue
        category = unicodedata.category(chr(code))
        expected = (
            category in ("Cc", "Zl", "Zp")
            or code in bidi
            or (category == "Cf" and code not in (0x200C, 0x200D))
            # A backslash ("/" separates folders); a colon: "a:b" starts with a drive, a:
            or code in {0x5C, 0x3A}
        )
        refused += expected
        if (file_name_problem(f"a{chr(code)}b") is not None) != expected:
            differ.append(f"U+{code:04X}")
    assert differ == [] and refused > 200


def test_names_differing_only_in_ascii_case_are_one_name_and_others_are_not() -> None:
    for code in range(0x80):
        assert same_name_key(f"Rank{chr(code)}") == same_name_key(f"rank{chr(code).swapcase()}")
    assert same_name_key("rank0.json") != same_name_key("rank0.jsoN ")
    assert same_name_key("STRASSE") == same_name_key("straße")  # caseless beyond ASCII


def test_a_file_name_of_1024_bytes_accepted_and_1025_refused_counting_utf8() -> None:
    assert read(with_file(name="é" * 512)).files[0].name == "é" * 512
    assert "1,024 bytes" in only_problem(with_file(name="é" * 512 + "a")).message


def test_a_name_folded_past_2048_bytes_is_refused() -> None:
    """U+1D160 (4 bytes) is 12 bytes once normalized: the key names are compared by."""
    assert read(with_file(name="\U0001d160" * 170)).files
    problem = only_problem(with_file(name="\U0001d160" * 171))
    assert "at most 2,048 bytes once Unicode-normalized and case-folded" in problem.message


@pytest.mark.parametrize(
    ("names", "at", "why"),
    [
        (
            ["x", "x/y"],
            1,
            'files[0].name "x" would be a file and the folder of files[1].name "x/y"',
        ),
        (["x/y/z", "x"], 1, 'files[1].name "x" would be a file and the folder of files[0].name'),
        (["x/y/z", "X/Y"], 1, 'files[1].name "X/Y" would be a file and the folder of files[0]'),
        (["caf\u00e9", "cafe\u0301/r.json"], 1, 'files[0].name "caf\u00e9" would be a file'),
    ],
    ids=["file-then-folder", "folder-then-file", "case", "nfc"],
)
def test_a_name_cannot_be_both_a_file_and_a_folder(names: list[str], at: int, why: str) -> None:
    problem = only_problem(body(files=files(*names)))
    assert problem.member == f"files[{at}].name"
    assert problem.message.startswith(why) and problem.message.endswith("a name cannot be both")


def test_names_sharing_a_folder_or_a_prefix_are_different_files() -> None:
    names = ["x/y", "x/z", "x.json", "xy/z", "x/y.d/z", "y/x"]
    assert [f.name for f in read(body(files=files(*names))).files] == names


def test_a_file_name_with_a_lone_surrogate_is_refused() -> None:
    assert only_problem(with_file(name="a\ud800")).member == "files[0].name"


@pytest.mark.parametrize("name", [None, 1, ["a"]])
def test_a_file_name_must_be_a_string(name: Any) -> None:
    assert only_problem(with_file(name=name)).member == "files[0].name"


# -- size -------------------------------------------------------------------------------


@pytest.mark.parametrize("size", [0, 1, 5 * TIB])
def test_size_0_to_5_tib_accepted(size: int) -> None:
    assert read(with_file(size=size)).files[0].size == size


@pytest.mark.parametrize(
    "literal", [str(5 * TIB + 1), "-1", "1.0", "1e3", '"1"', "true", "null", "9" * 40, "-0.0"]
)
def test_size_must_be_a_whole_number_from_0_to_5_tib(literal: str) -> None:
    value = loads(literal)
    problem = only_problem(with_file(size=value))
    assert problem.member == "files[0].size"
    assert problem.value == value
    assert "whole number" in problem.message and literal in problem.message


def test_size_is_required() -> None:
    entry = {"name": "a.log", "role": "supporting"}
    assert only_problem(body(files=[entry])).member == "files[0].size"


# -- role -------------------------------------------------------------------------------


@pytest.mark.parametrize("role", ["primary", "supporting"])
def test_role_primary_or_supporting_accepted(role: str) -> None:
    assert read(with_file(role=role)).files[0].role == role


@pytest.mark.parametrize("role", ["Primary", "PRIMARY", "support", "", None, 1])
def test_role_must_be_primary_or_supporting(role: Any) -> None:
    request = with_file(role=role)
    request["workloadMetadata"] = None  # no primary file, so no rank count is needed
    problem = only_problem(request)
    assert problem.member == "files[0].role"
    assert problem.value == role


# -- sha256 -----------------------------------------------------------------------------


@pytest.mark.parametrize("sha256", ["0123456789abcdef" * 4, None])
def test_sha256_64_lowercase_hex_or_null_accepted(sha256: str | None) -> None:
    assert read(with_file(sha256=sha256)).files[0].sha256 == sha256


def test_sha256_may_be_absent() -> None:
    assert read(with_file()).files[0].sha256 is None


@pytest.mark.parametrize(
    "sha256",
    ["0123456789ABCDEF" * 4, "a" * 63, "a" * 65, "g" * 64, "", " " + "a" * 63, 5, ["a" * 64]],
    ids=["upper", "63", "65", "not-hex", "empty", "space", "number", "array"],
)
def test_sha256_must_be_64_lowercase_hex(sha256: Any) -> None:
    problem = only_problem(with_file(sha256=sha256))
    assert problem.member == "files[0].sha256"
    assert problem.value == sha256


def test_sha256_with_a_trailing_newline_is_refused() -> None:
    assert only_problem(with_file(sha256="a" * 64 + "\n")).member == "files[0].sha256"


# -- unknown members and the body -------------------------------------------------------


def test_unknown_members_are_refused_in_the_order_given() -> None:
    request = {"zeta": 1, **EXAMPLE, "alpha": 2, "workload_metadata": {}}
    found = problems(request)
    assert [p.member for p in found] == ["zeta", "alpha", "workload_metadata"]
    assert [p.value for p in found] == [1, 2, {}]
    assert all(p.member in p.message for p in found)


def test_unknown_file_members_are_refused_in_the_order_given() -> None:
    found = problems(with_file(path="x", Size=2))
    assert [p.member for p in found] == ["files[0].path", "files[0].Size"]


@pytest.mark.parametrize("literal", ["[]", '"x"', "1", "null", "true", "[{}]"])
def test_a_body_that_is_not_an_object_is_refused(literal: str) -> None:
    problem = only_problem(loads(literal))
    assert problem.value == loads(literal)
    assert "object" in problem.message


# -- the source document's rules on upload ----------------------------------------------


def test_primary_files_without_a_rank_count_give_the_documents_message() -> None:
    for metadata in (None, {}, {"shape": {"rank_count": 8}}, {"parallelism": {"cp": 2}}):
        problem = only_problem(body(workloadMetadata=metadata))
        assert problem.member == "workloadMetadata"
        assert problem.message == MISSING_RANK_COUNT
    assert only_problem(without(EXAMPLE, "workloadMetadata")).message == MISSING_RANK_COUNT


def test_supporting_files_only_need_no_rank_count() -> None:
    request = read(body(files=files("config.yaml"), workloadMetadata={"workload_family": "gpt"}))
    assert request.rank_count is None
    assert request.workload_metadata == b'{"workload_family":"gpt"}'


def test_one_primary_file_among_supporting_ones_needs_a_rank_count() -> None:
    entries = [*files("a.log", "b.log"), *files("traces.zip", role="primary")]
    assert only_problem(body(files=entries, workloadMetadata=None)).message == MISSING_RANK_COUNT


def test_a_primary_file_with_a_bad_size_still_needs_a_rank_count() -> None:
    request = with_file(size=-1)
    request["workloadMetadata"] = None
    assert [p.member for p in problems(request)] == ["files[0].size", "workloadMetadata"]


def test_metadata_problems_are_dotted_paths_under_workload_metadata() -> None:
    metadata = loads('{"shape":{"rankCount":2.0},"parallelism":{"dp":0}}')
    found = problems(body(workloadMetadata=metadata))
    assert [p.member for p in found] == [
        "workloadMetadata.shape.rankCount",
        "workloadMetadata.parallelism.dp",
    ]
    assert found[0].value == JsonNumber("2.0")


def test_metadata_over_65536_bytes_is_refused_on_upload() -> None:
    metadata = {"shape": {"rankCount": 1}, "note": "é" * 40_000}
    problem = only_problem(body(workloadMetadata=metadata))
    assert problem.member == "workloadMetadata"
    assert "65,536 bytes" in problem.message


def test_all_problems_are_listed_together_including_metadata_problems() -> None:
    request = {
        "name": "",
        "extra": True,
        "files": [
            {"name": "/abs", "size": 1.0, "role": "primary", "sha256": "XYZ"},
            {"name": "ok.log", "size": 0, "role": "other"},
        ],
        "workloadMetadata": loads('{"shape":{"rankCount":"4"},"parallelism":{"dp":2,"tp":true}}'),
    }
    found = problems(request)
    assert [p.member for p in found] == [
        "extra",
        "name",
        "files[0].name",
        "files[0].size",
        "files[0].sha256",
        "files[1].role",
        "workloadMetadata.shape.rankCount",
        "workloadMetadata.parallelism.tp",
    ]
    assert found[0].message == problems(request)[0].message  # the same first problem each time
