"""Files declared part by part (``partSize``, ``partSha256``): on S3 each part URL signs its
part's digest, and ``complete`` checks the file from S3's own checksums without reading it.

On local files the declaration is accepted and the bytes are checked as they arrive, so
every test here holds on both backends.
"""

from __future__ import annotations

import base64
import hashlib
import os
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.flows import problems, put, send
from tests.relay import CountingRelay
from tests.server import ServerProcess, uses_s3

MIB = 1024 * 1024
PART = 5 * MIB
#: Over the scaled run's multipart threshold (5 MiB): three parts on S3.
DATA_SIZE = 2 * PART + 7


def declared(name: str, data: bytes, part_size: int = PART) -> dict[str, Any]:
    return {
        "name": name,
        "size": len(data),
        "role": "supporting",
        "sha256": hashlib.sha256(data).hexdigest(),
        "partSize": part_size,
        "partSha256": [
            hashlib.sha256(data[start : start + part_size]).hexdigest()
            for start in range(0, max(len(data), 1), part_size)
        ],
    }


def create(api: httpx.Client, *files: dict[str, Any]) -> httpx.Response:
    return api.post(
        "/api/v1/tracesets/upload-url",
        json={"name": "in parts", "files": list(files), "workloadMetadata": None},
    )


@pytest.fixture
def counted(tmp_path: Path) -> Iterator[tuple[httpx.Client, CountingRelay | None]]:
    """A service of its own and, on S3, a relay counting the bytes S3 sends it."""
    with ExitStack() as stack:
        extra: dict[str, str] = {}
        relay = None
        if uses_s3():
            relay = stack.enter_context(CountingRelay(os.environ["AWS_ENDPOINT_URL"]))
            extra["AWS_ENDPOINT_URL"] = relay.url
        service = ServerProcess(tmp_path / "service", extra_env=extra)
        service.start()
        stack.callback(service.stop)
        api = httpx.Client(
            base_url=service.url, headers={"Authorization": f"Bearer {service.token}"}, timeout=60
        )
        yield stack.enter_context(api), relay


def complete_reading(
    api: httpx.Client, relay: CountingRelay | None, traceset_id: str
) -> tuple[httpx.Response, int]:
    """``complete``'s answer, and the bytes S3 sent the service while it ran."""
    before = relay.received if relay else 0
    done = api.post(f"/api/v1/tracesets/{traceset_id}/complete")
    return done, (relay.received - before) if relay else 0


def test_parts_are_signed_with_their_digests_and_complete_reads_no_byte(
    counted: tuple[httpx.Client, CountingRelay | None],
) -> None:
    api, relay = counted
    data = os.urandom(DATA_SIZE)
    entry = declared("big.bin", data)
    answer = create(api, entry)
    assert answer.status_code == 201, answer.text
    created = answer.json()
    [target] = created["uploads"]
    if target.get("parts"):  # S3: the declared part size, each part with its digest
        assert target["partSize"] == PART
        assert [p["size"] for p in target["parts"]] == [PART, PART, 7]
        for part, digest in zip(target["parts"], entry["partSha256"], strict=True):
            signed = base64.b64encode(bytes.fromhex(digest)).decode()
            assert part["headers"] == {"x-amz-checksum-sha256": signed}
            assert "x-amz-checksum-sha256" in httpx.URL(part["url"]).params["X-Amz-SignedHeaders"]
    send(target, data)
    pending = api.get(f"/api/v1/tracesets/{created['tracesetId']}").json()
    assert pending["files"][0]["checked"] is None
    done, read = complete_reading(api, relay, created["tracesetId"])
    assert done.status_code == 200, done.text
    assert read < 64 * 1024, f"complete read {read:,} bytes of a {len(data):,}-byte file"
    [file] = done.json()["files"]
    assert file["sha256"] == entry["sha256"] and file["received"] is True
    if target.get("parts"):  # what S3 vouched for: its composite of the declared parts
        joined = b"".join(bytes.fromhex(digest) for digest in entry["partSha256"])
        composite = base64.b64encode(hashlib.sha256(joined).digest()).decode()
        assert file["checked"]["by"] == "s3-composite-sha256"
        assert file["checked"]["checksum"].split("-")[0] == composite
    else:  # the service hashed every byte as it arrived
        assert file["checked"] == {"by": "sha256", "checksum": entry["sha256"]}
    again = api.get(f"/api/v1/tracesets/{created['tracesetId']}").json()["files"][0]
    assert again["checked"] == file["checked"]
    got = api.get(f"/api/v1/tracesets/{created['tracesetId']}/files/big.bin", follow_redirects=True)
    assert got.content == data


def test_parts_without_digests_are_read_back(
    counted: tuple[httpx.Client, CountingRelay | None],
) -> None:
    """The other way, which also shows the relay sees a read-back: on S3, ``complete`` of a
    file sent in parts without ``partSha256`` reads the whole object to hash it."""
    api, relay = counted
    data = os.urandom(DATA_SIZE)
    entry = {k: v for k, v in declared("big.bin", data).items() if not k.startswith("part")}
    created = create(api, entry).json()
    [target] = created["uploads"]
    send(target, data)
    done, read = complete_reading(api, relay, created["tracesetId"])
    assert done.status_code == 200, done.text
    if target.get("parts"):
        assert read >= len(data)
    # Read back on S3, hashed on arrival on local files: the service's own SHA-256 either way.
    [file] = done.json()["files"]
    assert file["checked"] == {"by": "sha256", "checksum": entry["sha256"]}


def test_a_part_of_other_bytes_is_never_kept(api: httpx.Client) -> None:
    """S3 refuses the part (its signed digest); a store that does not check part digests
    (moto) takes it, and then ``complete`` refuses the file from S3's composite checksum."""
    data = os.urandom(DATA_SIZE)
    answer = create(api, declared("big.bin", data))
    assert answer.status_code == 201, answer.text
    created = answer.json()
    [target] = created["uploads"]
    other = bytearray(data)
    other[PART + 100] ^= 0xFF  # one byte of part 2
    if not target.get("parts"):  # local files: one PUT, checked as it arrives
        assert put(target["url"], bytes(other), target["headers"]).status_code == 400
        return
    refused = False
    for part in target["parts"]:
        start = (part["partNumber"] - 1) * target["partSize"]
        sent = put(part["url"], bytes(other[start : start + part["size"]]), part["headers"])
        refused = refused or sent.status_code == 400
    done = api.post(f"/api/v1/tracesets/{created['tracesetId']}/complete")
    assert done.status_code == 409, done.text
    [problem] = problems(done)
    assert problem["member"] == "big.bin" or "big.bin" in problem["message"], problem
    if not refused:
        assert "declared parts" in problem["message"], problem
    # The wrong bytes are gone: the missing parts are handed out again, signed as before.
    status = api.get(f"/api/v1/tracesets/{created['tracesetId']}/uploads").json()
    [again] = status["uploads"]
    send(again, data)
    done = api.post(f"/api/v1/tracesets/{created['tracesetId']}/complete")
    assert done.status_code == 200, done.text
    got = api.get(f"/api/v1/tracesets/{created['tracesetId']}/files/big.bin", follow_redirects=True)
    assert got.content == data


def test_resumed_parts_keep_their_signed_digests(api: httpx.Client) -> None:
    data = os.urandom(DATA_SIZE)
    entry = declared("big.bin", data)
    created = create(api, entry).json()
    [target] = created["uploads"]
    if target.get("parts"):
        send(target, data, parts=[2])
    status = api.get(f"/api/v1/tracesets/{created['tracesetId']}/uploads").json()
    [rest] = status["uploads"]
    if target.get("parts"):
        assert [p["partNumber"] for p in rest["parts"]] == [1, 3]
        assert [p["headers"] for p in rest["parts"]] == [
            target["parts"][0]["headers"],
            target["parts"][2]["headers"],
        ]
    send(rest, data)
    done = api.post(f"/api/v1/tracesets/{created['tracesetId']}/complete")
    assert done.status_code == 200, done.text
    assert done.json()["files"][0]["sha256"] == entry["sha256"]


@pytest.mark.parametrize(
    ("change", "member", "words"),
    [
        ({"sha256": None}, "files[0].sha256", "must be given with partSha256"),
        ({"partSize": 4 * MIB}, "files[0].partSize", "from 5 MiB to 5 GiB"),
        ({"partSize": None}, "files[0].partSize", "from 5 MiB to 5 GiB"),
        ({"partSize": 5.0 * MIB}, "files[0].partSize", "whole number"),
        ({"partSha256": ["ab" * 32]}, "files[0].partSha256", "one digest per part"),
        ({"partSha256": ["AB" * 32] * 3}, "files[0].partSha256", "lowercase hexadecimal"),
        ({"partSha256": "ab" * 32}, "files[0].partSha256", "must be an array"),
    ],
)
def test_a_wrong_part_declaration_is_refused_naming_it(
    api: httpx.Client, change: dict[str, Any], member: str, words: str
) -> None:
    entry = {**declared("big.bin", os.urandom(DATA_SIZE)), **change}
    entry = {k: v for k, v in entry.items() if v is not None}
    answer = create(api, entry)
    assert answer.status_code == 400, answer.text
    found = [p for p in problems(answer) if p["member"] == member]
    assert found and words in found[0]["message"], problems(answer)


def test_a_file_sent_whole_is_checked_by_its_sha256(api: httpx.Client) -> None:
    """One PUT: S3 checked its signed SHA-256 and keeps it; on local files the service
    hashed the bytes as they arrived. Either way the file's answer says which, and the
    value is the file's own digest in the form of who vouched."""
    data = os.urandom(1024)
    sha256 = hashlib.sha256(data).hexdigest()
    entry = {"name": "whole.bin", "size": len(data), "role": "supporting", "sha256": sha256}
    created = create(api, entry).json()
    [target] = created["uploads"]
    send(target, data)
    done = api.post(f"/api/v1/tracesets/{created['tracesetId']}/complete")
    assert done.status_code == 200, done.text
    checked = done.json()["files"][0]["checked"]
    by_s3 = {"by": "s3-sha256", "checksum": base64.b64encode(bytes.fromhex(sha256)).decode()}
    by_service = {"by": "sha256", "checksum": sha256}
    # S3 keeps the checked SHA-256 of an object sent whole; a store that keeps none (moto
    # for presigned PUTs) has the service read the object back and hash it.
    assert checked in ((by_s3, by_service) if uses_s3() else (by_service,))
