"""Idempotency-Key on upload-url: a retried request never creates two tracesets."""

from __future__ import annotations

import uuid
from concurrent.futures import ThreadPoolExecutor

import httpx

from tests.flows import problems, send, spec
from tests.server import FRESH_CONNECTIONS, ServerProcess

BODY = {
    "name": "retried",
    "files": [spec("a", b"x")],
    "workloadMetadata": {"shape": {"rankCount": 8}},
}


def post(api: httpx.Client, key: str, body: object = BODY) -> httpx.Response:
    return api.post("/api/v1/tracesets/upload-url", json=body, headers={"Idempotency-Key": key})


def test_same_key_and_body_answer_the_first_traceset(api: httpx.Client) -> None:
    key = str(uuid.uuid4())
    first, again = post(api, key), post(api, key)
    assert first.status_code == again.status_code == 201
    assert first.json()["tracesetId"] == again.json()["tracesetId"]
    assert len(api.get("/api/v1/tracesets").json()["items"]) == 1
    send(again.json()["uploads"][0], b"x")


def test_same_key_with_another_body_is_422(api: httpx.Client) -> None:
    key = str(uuid.uuid4())
    assert post(api, key).status_code == 201
    answer = post(api, key, {**BODY, "name": "something else"})
    assert answer.status_code == 422
    assert problems(answer)[0]["member"] == "Idempotency-Key"
    assert len(api.get("/api/v1/tracesets").json()["items"]) == 1


def test_different_keys_make_different_tracesets(api: httpx.Client) -> None:
    assert post(api, "k-1").json()["tracesetId"] != post(api, "k-2").json()["tracesetId"]


def test_keys_belong_to_their_workspace(server: ServerProcess, api: httpx.Client) -> None:
    other = server.new_token("idem-other")
    mine = post(api, "shared-key").json()["tracesetId"]
    with httpx.Client(
        base_url=server.url,
        headers={"Authorization": f"Bearer {other}"},
        timeout=60,
        limits=FRESH_CONNECTIONS,
    ) as them:
        theirs = post(them, "shared-key")
    assert theirs.status_code == 201 and theirs.json()["tracesetId"] != mine


def test_concurrent_retries_with_one_key_make_one_traceset(api: httpx.Client) -> None:
    key = str(uuid.uuid4())
    with ThreadPoolExecutor(max_workers=8) as pool:
        answers = list(pool.map(lambda _: post(api, key), range(8)))
    assert {a.status_code for a in answers} == {201}
    assert len({a.json()["tracesetId"] for a in answers}) == 1
    assert len(api.get("/api/v1/tracesets").json()["items"]) == 1


def test_a_malformed_key_is_400(api: httpx.Client) -> None:
    answer = post(api, "has space")
    assert answer.status_code == 400
