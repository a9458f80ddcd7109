"""POST /tracesets/{id}/files: ranks of a job each add their own file to one traceset."""

from __future__ import annotations

import hashlib
import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from tests.flows import problems, request_urls, send, spec
from tests.server import ServerProcess

MANIFEST = b'{"job": "add-files"}'


def add(api: httpx.Client, traceset_id: str, *entries: dict[str, Any]) -> httpx.Response:
    return api.post(f"/api/v1/tracesets/{traceset_id}/files", json={"files": list(entries)})


def pending(api: httpx.Client) -> str:
    created = request_urls(api, {"job.json": MANIFEST}, {"shape": {"rankCount": 4}})
    send(created["uploads"][0], MANIFEST)
    return str(created["tracesetId"])


def test_added_files_upload_and_complete_like_the_first(api: httpx.Client) -> None:
    traceset_id = pending(api)
    data = {f"rank{r}.json": f"trace of rank {r}".encode() for r in range(2)}
    answer = add(api, traceset_id, *(spec(n, d) for n, d in data.items()))
    assert answer.status_code == 201, answer.text
    body = answer.json()
    assert body["tracesetId"] == traceset_id
    assert [u["name"] for u in body["uploads"]] == list(data)
    assert all(u["role"] == "primary" and u["method"] == "PUT" for u in body["uploads"])
    refused = api.post(f"/api/v1/tracesets/{traceset_id}/complete")
    assert refused.status_code == 409
    assert {p["value"] for p in problems(refused)} == set(data)
    for target in body["uploads"]:
        send(target, data[target["name"]])
    done = api.post(f"/api/v1/tracesets/{traceset_id}/complete")
    assert done.status_code == 200, done.text
    files = {f["name"]: f for f in done.json()["files"]}
    assert set(files) == {"job.json", *data}
    assert all(f["received"] for f in files.values())
    assert files["rank1.json"]["sha256"] == hashlib.sha256(data["rank1.json"]).hexdigest()
    got = api.get(f"/api/v1/tracesets/{traceset_id}/files/rank1.json", follow_redirects=True)
    assert got.content == data["rank1.json"]


def test_the_same_declaration_again_answers_what_is_left_to_send(api: httpx.Client) -> None:
    traceset_id = pending(api)
    entry = spec("rank0.json", b"zero")
    first = add(api, traceset_id, entry).json()["uploads"]
    again = add(api, traceset_id, entry)
    assert again.status_code == 201, again.text
    assert [u["name"] for u in again.json()["uploads"]] == ["rank0.json"]
    send(again.json()["uploads"][0], b"zero")
    assert first[0]["name"] == "rank0.json"
    after = add(api, traceset_id, entry)
    assert after.status_code == 201 and after.json()["uploads"] == []
    files = api.get(f"/api/v1/tracesets/{traceset_id}").json()["files"]
    assert [f["name"] for f in files] == ["job.json", "rank0.json"]


@pytest.mark.parametrize(
    "changed",
    [{"size": 5}, {"role": "supporting"}, {"sha256": "0" * 64}],
    ids=["size", "role", "sha256"],
)
def test_the_same_name_declared_otherwise_is_409(
    api: httpx.Client, changed: dict[str, Any]
) -> None:
    traceset_id = pending(api)
    assert add(api, traceset_id, spec("rank0.json", b"zero")).status_code == 201
    answer = add(
        api, traceset_id, spec("rank1.json", b"one"), {**spec("rank0.json", b"zero"), **changed}
    )
    assert answer.status_code == 409, answer.text
    [problem] = problems(answer)
    assert problem["member"] == "files[1].name" and "already in this traceset" in problem["message"]
    names = [f["name"] for f in api.get(f"/api/v1/tracesets/{traceset_id}").json()["files"]]
    assert names == ["job.json", "rank0.json"]  # rank1 was not added either


def test_a_name_of_the_first_request_declared_otherwise_is_409(api: httpx.Client) -> None:
    traceset_id = pending(api)
    answer = add(api, traceset_id, spec("job.json", b"another manifest"))
    assert answer.status_code == 409
    assert problems(answer)[0]["value"] == "job.json"


def test_every_problem_of_the_body_is_listed_as_upload_url_lists_them(api: httpx.Client) -> None:
    traceset_id = pending(api)
    body = {
        "files": [
            {"name": "../up.json", "size": 1, "role": "primary"},
            {"name": "a.json", "size": -1, "role": "main"},
            spec("b.json", b"b"),
            spec("b.json", b"b"),
        ],
        "extra": 1,
    }
    answer = api.post(f"/api/v1/tracesets/{traceset_id}/files", json=body)
    assert answer.status_code == 400
    assert [p["member"] for p in problems(answer)] == [
        "extra",
        "files[0].name",
        "files[1].size",
        "files[1].role",
        "files[3].name",
    ]
    empty: Any
    for empty in ({"files": []}, {}, [], {"files": {}}):
        assert api.post(f"/api/v1/tracesets/{traceset_id}/files", json=empty).status_code == 400
    files = api.get(f"/api/v1/tracesets/{traceset_id}").json()["files"]
    assert [f["name"] for f in files] == ["job.json"]


def test_only_a_pending_traceset_takes_files(api: httpx.Client) -> None:
    traceset_id = pending(api)
    assert api.post(f"/api/v1/tracesets/{traceset_id}/complete").status_code == 200
    answer = add(api, traceset_id, spec("rank0.json", b"zero"))
    assert answer.status_code == 409
    assert problems(answer)[0]["member"] == "status"
    assert add(api, "0" * 32, spec("rank0.json", b"zero")).status_code == 404


def test_primary_files_need_the_rank_count_upload_url_asks_for(api: httpx.Client) -> None:
    body = {"name": "no rank count", "files": [spec("notes.txt", b"n", role="supporting")]}
    created = api.post("/api/v1/tracesets/upload-url", json=body).json()
    answer = add(api, created["tracesetId"], spec("rank0.json", b"zero"))
    assert answer.status_code == 409
    assert "must declare a rank count" in problems(answer)[0]["message"]
    assert (
        add(api, created["tracesetId"], spec("log.txt", b"l", role="supporting")).status_code == 201
    )


def test_a_read_token_cannot_add(server: ServerProcess, api: httpx.Client) -> None:
    traceset_id = pending(api)
    done = server.cli("token", "create", "--scope", "read", "--data-dir", str(server.data_dir))
    assert done.returncode == 0, done.stderr
    headers = {"Authorization": f"Bearer {done.stdout.strip()}"}
    with httpx.Client(base_url=server.url, headers=headers) as reader:
        assert add(reader, traceset_id, spec("rank0.json", b"zero")).status_code == 403


def test_the_traceset_file_limit_counts_what_it_holds(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    server = ServerProcess(tmp_path_factory.mktemp("few"), extra_env={"TRACESETS_MAX_FILES": "3"})
    server.start()
    try:
        with httpx.Client(
            base_url=server.url, headers={"Authorization": f"Bearer {server.token}"}
        ) as api:
            traceset_id = pending(api)
            assert add(api, traceset_id, spec("rank0.json", b"0")).status_code == 201
            answer = add(api, traceset_id, spec("rank1.json", b"1"), spec("rank2.json", b"2"))
            assert answer.status_code == 409
            assert "limit of 3 files" in problems(answer)[0]["message"]
            assert add(api, traceset_id, spec("rank1.json", b"1")).status_code == 201
    finally:
        server.stop()


def test_a_large_added_file_goes_in_parts_and_resumes(api: httpx.Client) -> None:
    """Above the multipart threshold (CI's S3 pass sets it low) the entry lists parts."""
    traceset_id = pending(api)
    data = os.urandom(12 * 1024 * 1024 + 7)
    [target] = add(api, traceset_id, spec("big.bin", data)).json()["uploads"]
    if target.get("parts"):
        assert len(target["parts"]) >= 2 and target["url"] is None
        send(target, data, parts=[1])
    [rest] = add(api, traceset_id, spec("big.bin", data)).json()["uploads"]
    if target.get("parts"):
        assert [p["partNumber"] for p in rest["parts"]] == [
            p["partNumber"] for p in target["parts"][1:]
        ]
    send(rest, data)
    done = api.post(f"/api/v1/tracesets/{traceset_id}/complete")
    assert done.status_code == 200, done.text
    got = api.get(f"/api/v1/tracesets/{traceset_id}/files/big.bin", follow_redirects=True)
    assert got.content == data


RANKS = 256


def test_hundreds_of_ranks_adding_at_once_all_get_in(
    server: ServerProcess, api: httpx.Client
) -> None:
    """Each rank its own client, all at once; each then sends its bytes, and one completes."""
    traceset_id = pending(api)
    headers = api.headers

    def rank(r: int) -> tuple[int, int]:
        data = f"trace of rank {r}".encode()
        with httpx.Client(base_url=server.url, headers=headers, timeout=120) as client:
            answer = add(client, traceset_id, spec(f"rank{r}.json", data))
            if answer.status_code == 201:
                send(answer.json()["uploads"][0], data)
            return r, answer.status_code

    with ThreadPoolExecutor(max_workers=64) as pool:
        statuses = dict(pool.map(rank, range(RANKS)))
    assert set(statuses.values()) == {201}
    done = api.post(f"/api/v1/tracesets/{traceset_id}/complete")
    assert done.status_code == 200, done.text
    files = done.json()["files"]
    assert sorted(f["name"] for f in files) == sorted(
        ["job.json", *(f"rank{r}.json" for r in range(RANKS))]
    )
    assert all(f["received"] for f in files)
    got = api.get(f"/api/v1/tracesets/{traceset_id}/files/rank200.json", follow_redirects=True)
    assert got.content == b"trace of rank 200"


@pytest.mark.parametrize(
    ("first", "again", "why"),
    [
        ("Rank0.json", "rank0.json", 'the same name as "Rank0.json", already in this traceset'),
        ("caf\u00e9.json", "cafe\u0301.json", "once Unicode-normalized (NFC) and case-folded"),
        ("job.json", "JOB.JSON", 'the same name as "job.json"'),
        ("x", "X/y.json", 'would lie in "x", already in this traceset as a file'),
        ("x/y/z.json", "X/Y", 'would be a file and the folder of "x/y/z.json"'),
    ],
    ids=["case", "nfc", "case-of-upload-urls-file", "in-a-file", "folder-of-a-file"],
)
def test_a_name_of_one_file_spelled_otherwise_is_409(
    api: httpx.Client, first: str, again: str, why: str
) -> None:
    """Upload-url's rule for names against the files already stored: a later request cannot
    add what would be the same file, or a folder of one, on some disk."""
    traceset_id = pending(api)
    if first != "job.json":  # else the file upload-url declared
        assert add(api, traceset_id, spec(first, b"first")).status_code == 201
    answer = add(api, traceset_id, spec("rank1.json", b"one"), spec(again, b"second"))
    assert answer.status_code == 409, answer.text
    [problem] = problems(answer)
    assert (problem["member"], problem["value"]) == ("files[1].name", again)
    assert problem["message"].startswith(f'files[1].name "{again}"')
    assert why in problem["message"]
    names = {f["name"] for f in api.get(f"/api/v1/tracesets/{traceset_id}").json()["files"]}
    assert names == {"job.json", first}  # rank1 was not added either


def test_two_spellings_of_one_name_added_at_once_add_one_file(
    server: ServerProcess, api: httpx.Client
) -> None:
    """Pairs of requests at once, each adding one name spelled two ways: one is added, the
    other answered 409, whichever comes first."""
    tracesets = [pending(api) for _ in range(8)]
    headers = api.headers

    def one(job: tuple[str, str]) -> int:
        traceset_id, name = job
        with httpx.Client(base_url=server.url, headers=headers, timeout=60) as client:
            return add(client, traceset_id, spec(name, name.encode())).status_code

    jobs = [(t, name) for t in tracesets for name in ("Rank0.json", "rank0.json", "RANK0.json")]
    with ThreadPoolExecutor(max_workers=len(jobs)) as pool:
        statuses = list(pool.map(one, jobs))
    for at, traceset_id in enumerate(tracesets):
        assert sorted(statuses[3 * at : 3 * at + 3]) == [201, 409, 409]
        files = api.get(f"/api/v1/tracesets/{traceset_id}").json()["files"]
        assert len(files) == 2 and files[1]["name"].lower() == "rank0.json"
