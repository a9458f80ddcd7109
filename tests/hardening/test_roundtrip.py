"""Over HTTP: generated metadata that passes upload or promotion comes back byte for byte.

The rules' own property tests (tests/test_workload_properties.py, tests/test_promotion.py)
check the pure functions. These send generated bodies, any JSON value nested anywhere in
``workloadMetadata``, any text in names, to the running service on whichever backends
the run uses: each answer is 201/200 with the object stored exactly as sent, or 400
naming the problems, never anything else. (Here a rule that holds on SQLite and fails
on PostgreSQL shows: U+0000 in metadata was one.)
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.flows import upload
from tests.jsonvalues import json_values, same_json, texts
from tracesets.jsontext import dumps, loads

SETTINGS = settings(
    max_examples=150,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
RANK_COUNT = 8


@st.composite
def metadatas(draw: st.DrawFn) -> dict[str, Any]:
    """A valid declaration of 8 ranks, with any members anywhere around it."""
    extras = st.dictionaries(texts, json_values, max_size=4)
    shape = {**draw(extras), "rankCount": RANK_COUNT}
    metadata = {**draw(extras), "shape": shape}
    if draw(st.booleans()):
        metadata["parallelism"] = {**draw(extras), "dp": 4, "tp": 2}
    return metadata


def stored_text(answer: httpx.Response) -> bytes:
    """The bytes of ``workloadMetadata`` in an answer, exactly as the service wrote them."""
    raw = answer.content
    start = raw.index(b'"workloadMetadata":') + len(b'"workloadMetadata":')
    end = raw.rindex(b',"rankCountDerived":')  # the member after it, whatever the metadata holds
    return raw[start:end]


def refused(answer: httpx.Response) -> bool:
    if answer.status_code != 400:
        return False
    problems = answer.json()["errors"]
    return bool(problems) and all(p["message"] for p in problems)


@pytest.fixture(scope="module")
def promotable(hardening_api: httpx.Client) -> str:
    """A ready traceset of 8 ranks: promotion may be repeated, each time with new metadata."""
    metadata = {"shape": {"rankCount": RANK_COUNT}}
    return str(upload(hardening_api, {"rank0.json": b"{}"}, metadata)["id"])


@SETTINGS
@given(metadata=metadatas(), name=texts.filter(bool), description=st.none() | texts)
def test_metadata_that_passes_upload_comes_back_byte_for_byte(
    hardening_api: httpx.Client, metadata: dict[str, Any], name: str, description: str | None
) -> None:
    body = {
        "name": name,
        "description": description,
        "files": [{"name": "rank0.json", "size": 1, "role": "primary"}],
        "workloadMetadata": metadata,
    }
    answer = hardening_api.post(
        "/api/v1/tracesets/upload-url",
        content=dumps(body),
        headers={"Content-Type": "application/json"},
    )
    if refused(answer):
        return
    assert answer.status_code == 201, answer.text
    got = hardening_api.get(f"/api/v1/tracesets/{answer.json()['tracesetId']}")
    assert got.status_code == 200, got.text
    assert stored_text(got) == dumps(metadata)
    assert same_json(loads(stored_text(got)), metadata)
    traceset = got.json()
    assert (traceset["name"], traceset["description"]) == (name, description)
    assert traceset["rankCountDerived"] == RANK_COUNT


@SETTINGS
@given(metadata=metadatas())
def test_metadata_that_passes_promotion_comes_back_byte_for_byte(
    hardening_api: httpx.Client, promotable: str, metadata: dict[str, Any]
) -> None:
    path = f"/api/v1/tracesets/{promotable}"
    answer = hardening_api.post(
        f"{path}/promote",
        content=dumps({"workloadMetadata": metadata}),
        headers={"Content-Type": "application/json"},
    )
    if refused(answer):
        return
    assert answer.status_code == 200, answer.text
    assert stored_text(answer) == dumps(metadata)
    got = hardening_api.get(path)
    assert stored_text(got) == dumps(metadata)
    assert got.json()["status"] == "promoted"


def test_nul_in_metadata_is_stored_and_returned(
    hardening_api: httpx.Client, promotable: str
) -> None:
    """U+0000 inside workloadMetadata is data like any other, on every backend.

    (On PostgreSQL it was a 500 until the filter columns left such documents out.)
    """
    metadata = {"shape": {"rankCount": RANK_COUNT}, "note": "a\x00b", "\x00": ["\x00"]}
    files = [{"name": "rank0.json", "size": 1, "role": "primary"}]
    created = hardening_api.post(
        "/api/v1/tracesets/upload-url",
        json={"name": "nul", "files": files, "workloadMetadata": metadata},
    )
    assert created.status_code == 201, created.text
    got = hardening_api.get(f"/api/v1/tracesets/{created.json()['tracesetId']}")
    assert stored_text(got) == dumps(metadata)
    promoted = hardening_api.post(
        f"/api/v1/tracesets/{promotable}/promote", json={"workloadMetadata": metadata}
    )
    assert promoted.status_code == 200, promoted.text
    assert stored_text(promoted) == dumps(metadata)
