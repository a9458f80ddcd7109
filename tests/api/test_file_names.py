"""File names are safe anywhere: no controls or invisible characters, no two names for one file.

The rules live in the pure core (``tracesets.uploadrequest``, tested there one by one);
these check that the service applies them and stores nothing when it refuses.
"""

from __future__ import annotations

import httpx
import pytest

from tests.flows import RANKS_8, problems, upload


def declare(api: httpx.Client, *names: str) -> httpx.Response:
    files = [{"name": name, "size": 1, "role": "primary"} for name in names]
    return api.post(
        "/api/v1/tracesets/upload-url",
        json={"name": "t", "files": files, "workloadMetadata": RANKS_8},
    )


@pytest.mark.parametrize(
    ("name", "rule"),
    [
        ("rank0\n.json", "must not contain control characters"),
        ("rank0.json\r", "must not contain control characters"),
        ("a\x7f.json", "must not contain control characters"),
        ("a\x85.json", "must not contain control characters"),
        ("rank0\u202enosj.exe", "must not contain bidirectional formatting characters"),
        ("rank0\u2066.json", "must not contain bidirectional formatting characters"),
        ("rank\u200b0.json", "must not contain invisible formatting characters"),
    ],
    ids=["newline", "return", "del", "c1", "rlo", "lri", "zero-width-space"],
)
def test_unsafe_characters_are_refused(api: httpx.Client, name: str, rule: str) -> None:
    answer = declare(api, "ok.json", name)
    assert answer.status_code == 400, answer.text
    (problem,) = problems(answer)
    assert problem["member"] == "files[1].name"
    assert problem["value"] == name
    assert problem["message"].startswith(f"files[1].name {rule}")
    unsafe = next(c for c in name if not (c.isalnum() or c in "._"))
    assert problem["message"].endswith(
        f"; U+{ord(unsafe):04X} at character {name.index(unsafe) + 1} is one"
    )
    assert api.get("/api/v1/tracesets").json()["items"] == [], "nothing is stored"


def test_nfc_and_nfd_spellings_are_one_name(api: httpx.Client) -> None:
    answer = declare(api, "caf\u00e9.json", "cafe\u0301.json")
    assert answer.status_code == 400, answer.text
    (problem,) = problems(answer)
    assert problem["member"] == "files[1].name"
    assert "once Unicode-normalized (NFC)" in problem["message"]
    assert api.get("/api/v1/tracesets").json()["items"] == []


def test_names_differing_only_in_case_are_one_name(api: httpx.Client) -> None:
    answer = declare(api, "Rank0.json", "rank0.json")
    assert answer.status_code == 400, answer.text
    assert "differs only in case" in problems(answer)[0]["message"]


def test_safe_unicode_names_round_trip(api: httpx.Client) -> None:
    names = {"caf\u00e9/r\u0430nk0.json": b"a", "\u0645\u06cc\u200c\u062e\u0648.json": b"b"}
    traceset = upload(api, names)
    assert sorted(f["name"] for f in traceset["files"]) == sorted(names)
    for name, data in names.items():
        got = api.get(f"/api/v1/tracesets/{traceset['id']}/files/{name}", follow_redirects=True)
        assert got.status_code == 200 and got.content == data


@pytest.mark.parametrize(
    ("name", "rule"),
    [
        ("a//b.json", "must not contain an empty segment"),
        ("a/b/", "must not contain an empty segment"),
        ("a/./b.json", "must not contain a . segment"),
        ("./a.json", "must not contain a . segment"),
        ("C:/x.json", "must not start with a drive such as C:"),
        ("C:x.json", "must not start with a drive such as C:"),
    ],
    ids=["double-slash", "trailing-slash", "dot", "dot-first", "drive-root", "drive-relative"],
)
def test_a_path_not_in_its_one_spelling_is_refused(api: httpx.Client, name: str, rule: str) -> None:
    """Each of these is another spelling of a path (or leaves the folder on Windows): two
    files would be saved as one."""
    answer = declare(api, "a/b.json", name)
    assert answer.status_code == 400, answer.text
    (problem,) = problems(answer)
    assert (problem["member"], problem["value"]) == ("files[1].name", name)
    assert problem["message"].startswith(f"files[1].name {rule}")
    assert api.get("/api/v1/tracesets").json()["items"] == []


def test_a_name_that_is_the_folder_of_another_is_refused(api: httpx.Client) -> None:
    answer = declare(api, "ranks/0.json", "Ranks")
    assert answer.status_code == 400, answer.text
    (problem,) = problems(answer)
    assert (problem["member"], problem["value"]) == ("files[1].name", "Ranks")
    assert problem["message"] == (
        'files[1].name "Ranks" would be a file and the folder of files[0].name "ranks/0.json": '
        "a name cannot be both"
    )
    assert api.get("/api/v1/tracesets").json()["items"] == []
