"""The client declares its parts' SHA-256 for files the store takes in parts (above its
multipart threshold, and S3's least part size), from the same read as the file's sha256,
so the store checks each part; for other files it hashes them once, whole."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.client.conftest import MakeClient
from tests.server import ServerProcess, multipart_threshold
from tracesets.client import files
from tracesets.client.files import LocalFile, hash_file
from tracesets.uploadrequest import read_upload_request

MIB = 1024 * 1024


def local(path: Path) -> LocalFile:
    return LocalFile(path, path.name, path.stat().st_size, "supporting")


def test_small_files_are_declared_whole(tmp_path: Path) -> None:
    path = tmp_path / "small.bin"
    path.write_bytes(os.urandom(5 * MIB))
    spec = hash_file(local(path)).spec()
    assert spec["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert "partSize" not in spec and "partSha256" not in spec


def test_one_part_files_declare_their_own_digest(tmp_path: Path) -> None:
    path = tmp_path / "one.bin"
    path.write_bytes(os.urandom(5 * MIB + 1))
    spec = hash_file(local(path)).spec()
    assert spec["partSize"] == 64 * MIB and spec["partSha256"] == [spec["sha256"]]


def test_each_part_has_its_digest_and_the_service_reads_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(files, "PART_SIZE", 5 * MIB)
    data = os.urandom(2 * 5 * MIB + 3)
    path = tmp_path / "three.bin"
    path.write_bytes(data)
    spec = hash_file(local(path)).spec()
    assert spec["partSize"] == 5 * MIB
    assert spec["sha256"] == hashlib.sha256(data).hexdigest()
    assert spec["partSha256"] == [
        hashlib.sha256(data[start : start + 5 * MIB]).hexdigest()
        for start in (0, 5 * MIB, 10 * MIB)
    ]
    request = read_upload_request({"name": "n", "files": [spec]}, max_files=10)
    [declared] = request.files
    assert declared.parts is not None
    assert declared.parts.part_size == 5 * MIB
    assert list(declared.parts.sha256) == spec["partSha256"]


def test_part_size_grows_to_keep_a_thousand_parts() -> None:
    assert files.part_size_for(64 * MIB * 1000) == 64 * MIB
    assert files.part_size_for(64 * MIB * 1000 + 1) == 65 * MIB


def test_no_part_is_hashed_for_a_store_that_takes_none(tmp_path: Path) -> None:
    """Local files (whoami's threshold null): the file's sha256 alone, from one hash."""
    data = os.urandom(2 * 5 * MIB + 3)
    path = tmp_path / "three.bin"
    path.write_bytes(data)
    spec = hash_file(local(path), parts_above=None).spec()
    assert spec == {
        "name": "three.bin",
        "size": len(data),
        "role": "supporting",
        "sha256": hashlib.sha256(data).hexdigest(),
    }


def test_parts_are_hashed_only_above_the_stores_threshold(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """S3 takes files above its threshold in parts: below it, a single PUT needs no part
    digests; above it, each part has its own."""
    monkeypatch.setattr(files, "PART_SIZE", 5 * MIB)
    path = tmp_path / "three.bin"
    path.write_bytes(os.urandom(2 * 5 * MIB + 3))
    file = local(path)
    assert "partSha256" not in hash_file(file, parts_above=file.size).spec()
    assert len(hash_file(file, parts_above=file.size - 1).spec()["partSha256"]) == 3
    # A threshold under S3's least part changes nothing below that part.
    small = tmp_path / "small.bin"
    small.write_bytes(os.urandom(5 * MIB))
    assert "partSha256" not in hash_file(local(small), parts_above=MIB).spec()


class Declared(httpx.HTTPTransport):
    """The real network, with each upload-url body's files kept."""

    def __init__(self) -> None:
        super().__init__()
        self.files: list[dict[str, Any]] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if request.method == "POST" and request.url.path.endswith("/upload-url"):
            self.files += json.loads(request.read())["files"]
        return super().handle_request(request)


def test_both_clients_declare_part_digests_only_where_the_store_takes_parts(
    server: ServerProcess, workspace_token: str, tmp_path: Path, make_client: MakeClient
) -> None:
    """A file above S3's least part: on local files (whoami's threshold null) declared by
    its sha256 alone; on S3, with its parts' digests where it is above the threshold.
    Either way it arrives whole."""
    run = tmp_path / "run"
    run.mkdir()
    data = os.urandom(6 * MIB)
    (run / "rank0.bin").write_bytes(data)
    declared = Declared()
    with make_client(server.url, workspace_token, transport=declared) as client:
        done = client.upload(run, name="parts", workload_metadata={"shape": {"rankCount": 1}})
        threshold = client.whoami().multipartThreshold
    [entry] = declared.files
    assert entry["sha256"] == hashlib.sha256(data).hexdigest()
    assert threshold == multipart_threshold()  # None on local files
    in_parts = threshold is not None and len(data) > threshold
    assert ("partSha256" in entry) == in_parts == ("partSize" in entry)
    assert done.status == "ready" and [f.received for f in done.files] == [True]
