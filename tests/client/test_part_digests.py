"""The client declares its parts' SHA-256 for files above S3's least part size, from the
same read as the file's sha256, so a store that takes the file in parts checks it from
them."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

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
