"""Uploading: upload-url, PUT to the signed URL, complete; every refusal the contract names."""

from __future__ import annotations

import hashlib
import os
import subprocess
from typing import Any

import httpx
import pytest

from tests.flows import problems, put, request_urls, send, spec, upload
from tests.server import ServerProcess

SOURCE_EXAMPLE = """{
    "name": "GPT training, 256 ranks",
    "files": [
      { "name": "traces.zip", "size": 1048576, "role": "primary" }
    ],
    "workloadMetadata": {
      "parallelism": { "dp": 32, "tp": 8, "pp": 1 },
      "shape": { "rankCount": 256 }
    }
  }"""


def test_source_document_curl_example(server: ServerProcess, tmp_path: Any) -> None:
    """The source document's own curl line, pointed at the local service, end to end."""
    env = {**os.environ, "SCALA_API_TOKEN": server.token}
    created = subprocess.run(
        [
            "curl",
            "-s",
            "-w",
            "\n%{http_code}",
            "-X",
            "POST",
            f"{server.url}/api/v1/tracesets/upload-url",
            "-H",
            f"Authorization: Bearer {env['SCALA_API_TOKEN']}",
            "-H",
            "Content-Type: application/json",
            "-d",
            SOURCE_EXAMPLE,
        ],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    ).stdout
    body, status = created.rsplit("\n", 1)
    assert status == "201", body
    answer = httpx.Response(201, content=body.encode()).json()
    [target] = answer["uploads"]
    assert target["method"] == "PUT" and target["name"] == "traces.zip"
    data = tmp_path / "traces.zip"
    data.write_bytes(os.urandom(1048576))
    put_status = subprocess.run(
        ["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "-T", str(data), target["url"]],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert put_status == "200"
    headers = {"Authorization": f"Bearer {server.token}"}
    done = httpx.post(
        f"{server.url}/api/v1/tracesets/{answer['tracesetId']}/complete",
        headers=headers,
        timeout=60,
    )
    assert done.status_code == 200 and done.json()["status"] == "ready"
    got = httpx.get(
        f"{server.url}/api/v1/tracesets/{answer['tracesetId']}", headers=headers, timeout=60
    ).json()
    assert got["rankCountDerived"] == 256
    digest = hashlib.sha256(data.read_bytes()).hexdigest()
    assert got["files"] == [
        {
            "name": "traces.zip",
            "size": 1048576,
            "role": "primary",
            "sha256": digest,
            "received": True,
            # No digest declared: the service hashed the bytes (as they came, or read back).
            "checked": {"by": "sha256", "checksum": digest},
        }
    ]


def test_upload_answer_has_one_signed_put_per_file(api: httpx.Client) -> None:
    created = request_urls(api, {"a.json": b"a", "logs/b.txt": b"bb"})
    assert [u["name"] for u in created["uploads"]] == ["a.json", "logs/b.txt"]
    for target in created["uploads"]:
        assert target["method"] == "PUT" and isinstance(target["headers"], dict)
        assert "signature=" in target["url"].lower() and target["expiresAt"].endswith("Z")


def test_traceset_is_pending_until_complete(api: httpx.Client) -> None:
    created = request_urls(api, {"a": b"abc"})
    got = api.get(f"/api/v1/tracesets/{created['tracesetId']}").json()
    assert got["status"] == "pending" and got["files"][0]["received"] is False


def test_complete_names_every_missing_file(api: httpx.Client) -> None:
    files = {"rank0.json": b"0", "rank1.json": b"1", "rank2.json": b"2"}
    created = request_urls(api, files)
    send(created["uploads"][1], b"1")
    answer = api.post(f"/api/v1/tracesets/{created['tracesetId']}/complete")
    assert answer.status_code == 409
    assert [p["value"] for p in problems(answer)] == ["rank0.json", "rank2.json"]


def test_complete_twice_answers_the_same_ready_traceset(api: httpx.Client) -> None:
    traceset = upload(api, {"a": b"x"})
    again = api.post(f"/api/v1/tracesets/{traceset['id']}/complete")
    assert again.status_code == 200 and again.json()["status"] == "ready"


def test_undeclared_sha256_is_computed_on_arrival(api: httpx.Client) -> None:
    traceset = upload(api, {"a": b"payload"}, with_sha=False)
    assert traceset["files"][0]["sha256"] == hashlib.sha256(b"payload").hexdigest()


def test_empty_file_uploads(api: httpx.Client) -> None:
    traceset = upload(api, {"empty.log": b""})
    assert traceset["files"][0]["size"] == 0 and traceset["files"][0]["received"] is True


def test_download_of_unknown_or_unreceived_file(api: httpx.Client) -> None:
    created = request_urls(api, {"a": b"x"})
    path = f"/api/v1/tracesets/{created['tracesetId']}/files"
    assert api.get(f"{path}/a").status_code == 409
    assert api.get(f"{path}/nope").status_code == 404


def test_delete_removes_the_traceset_and_its_files(api: httpx.Client) -> None:
    traceset = upload(api, {"a": b"bytes"})
    location = api.get(f"/api/v1/tracesets/{traceset['id']}/files/a").headers["location"]
    assert api.delete(f"/api/v1/tracesets/{traceset['id']}").status_code == 204
    assert api.get(f"/api/v1/tracesets/{traceset['id']}").status_code == 404
    assert api.delete(f"/api/v1/tracesets/{traceset['id']}").status_code == 404
    assert httpx.get(location, timeout=60).status_code in (403, 404), "the bytes are gone"


def test_nothing_is_stored_when_a_check_fails(api: httpx.Client) -> None:
    bad = {"name": "x", "files": [spec("a", b"x")], "workloadMetadata": {"shape": {"rankCount": 0}}}
    assert api.post("/api/v1/tracesets/upload-url", json=bad).status_code == 400
    assert api.get("/api/v1/tracesets").json()["items"] == []


@pytest.mark.parametrize(
    ("metadata", "member"),
    [
        ({"shape": {"rankCount": 2.0}}, "workloadMetadata.shape.rankCount"),
        ({"parallelism": {"dp": "4"}}, "workloadMetadata.parallelism.dp"),
        ({"parallelism": {"tp": True}}, "workloadMetadata.parallelism.tp"),
        ({"shape": {"rankCount": 3_000_000_000}}, "workloadMetadata.shape.rankCount"),
        ({"shape": []}, "workloadMetadata.shape"),
        ("big", "workloadMetadata"),
    ],
)
def test_rule_violations_answer_400_naming_the_member(
    api: httpx.Client, metadata: Any, member: str
) -> None:
    body = {"name": "x", "files": [spec("a", b"x")], "workloadMetadata": metadata}
    answer = api.post("/api/v1/tracesets/upload-url", json=body)
    assert answer.status_code == 400
    assert problems(answer)[0]["member"] == member


def test_every_problem_is_listed(api: httpx.Client) -> None:
    body = {
        "name": "",
        "files": [{"name": "../x", "size": -1, "role": "main"}],
        "workloadMetadata": {"shape": {"rankCount": 0}, "parallelism": {"dp": 2.5, "pp": "2"}},
    }
    members = {p["member"] for p in problems(api.post("/api/v1/tracesets/upload-url", json=body))}
    assert members == {
        "name",
        "files[0].name",
        "files[0].size",
        "files[0].role",
        "workloadMetadata.shape.rankCount",
        "workloadMetadata.parallelism.dp",
        "workloadMetadata.parallelism.pp",
    }


def test_missing_rank_count_uses_the_source_wording(api: httpx.Client) -> None:
    body = {
        "name": "x",
        "files": [spec("a", b"x")],
        "workloadMetadata": {"shape": {"rank_count": 8}},
    }
    answer = api.post("/api/v1/tracesets/upload-url", json=body)
    assert answer.status_code == 400
    assert answer.json()["detail"] == (
        "Uploads with primary trace files must declare a rank count: set "
        "workloadMetadata.shape.rankCount, or workloadMetadata.parallelism degrees (dp, tp, sp, ep, pp)"
    )


def test_supporting_files_only_need_no_rank_count(api: httpx.Client) -> None:
    body = {"name": "logs", "files": [spec("run.log", b"x", "supporting")]}
    created = api.post("/api/v1/tracesets/upload-url", json=body)
    assert created.status_code == 201
    got = api.get(f"/api/v1/tracesets/{created.json()['tracesetId']}").json()
    assert got["rankCountDerived"] is None and got["workloadMetadata"] is None


def test_wrong_bytes_never_make_a_traceset_ready(api: httpx.Client) -> None:
    """Wrong size or digest: refused by the store at PUT, or at the latest by complete."""
    created = request_urls(api, {"size": b"12345", "digest": b"right"})
    size_target, digest_target = created["uploads"]
    for target, wrong in ((size_target, b"1234"), (digest_target, b"wrong")):
        answer = put(target["url"], wrong, target["headers"])
        assert answer.status_code in (200, 400, 403), answer.text
    done = api.post(f"/api/v1/tracesets/{created['tracesetId']}/complete")
    assert done.status_code == 409
    assert [p["value"] for p in problems(done)] == ["size", "digest"]
    for target, right in ((size_target, b"12345"), (digest_target, b"right")):
        send(target, right)
    assert api.post(f"/api/v1/tracesets/{created['tracesetId']}/complete").status_code == 200


def test_download_redirects_to_a_url_with_the_bytes(api: httpx.Client) -> None:
    data = os.urandom(300_000)
    traceset = upload(api, {"ranks/rank0.json": data})
    answer = api.get(f"/api/v1/tracesets/{traceset['id']}/files/ranks/rank0.json")
    assert answer.status_code == 307
    fetched = httpx.get(answer.headers["location"], timeout=60)
    assert fetched.status_code == 200 and fetched.content == data
    assert "rank0.json" in fetched.headers["content-disposition"]


def test_large_file_resumes_where_it_stopped(api: httpx.Client) -> None:
    """Above the multipart threshold (CI's S3 pass sets it low) a file goes in parts."""
    data = os.urandom(12 * 1024 * 1024 + 7)
    created = request_urls(api, {"big.bin": data})
    [target] = created["uploads"]
    if target.get("parts"):
        assert len(target["parts"]) >= 2 and target["url"] is None
        send(target, data, parts=[1])
    status = api.get(f"/api/v1/tracesets/{created['tracesetId']}/uploads").json()
    assert status["status"] == "pending" and status["received"] == []
    [rest] = status["uploads"]
    if target.get("parts"):
        assert [p["partNumber"] for p in rest["parts"]] == [
            p["partNumber"] for p in target["parts"][1:]
        ]
    assert api.post(f"/api/v1/tracesets/{created['tracesetId']}/complete").status_code == 409
    send(rest, data)
    status = api.get(f"/api/v1/tracesets/{created['tracesetId']}/uploads").json()
    assert status["received"] == ["big.bin"] and status["uploads"] == []
    done = api.post(f"/api/v1/tracesets/{created['tracesetId']}/complete")
    assert done.status_code == 200, done.text
    got = api.get(f"/api/v1/tracesets/{created['tracesetId']}/files/big.bin", follow_redirects=True)
    assert got.content == data
