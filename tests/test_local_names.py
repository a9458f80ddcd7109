"""Which of a traceset's local files ``complete`` keeps, and the sizes it checks: a file is
under its key and digest, or, stored before names carried the digest, under its key
alone; every other file of the traceset's folder is an upload no file names."""

from __future__ import annotations

import hashlib
from pathlib import Path

from tracesets.storage.local import LocalBlobStore
from tracesets.storage.signing import URLSigner


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def store_with(tmp_path: Path, files: dict[str, bytes]) -> LocalBlobStore:
    store = LocalBlobStore(tmp_path, URLSigner(b"s" * 32))
    for name, data in files.items():
        path = store.blobs / "t" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return store


def test_complete_keeps_the_named_files_and_drops_every_other(tmp_path: Path) -> None:
    kept, replaced, late = b"rank 0", b"rank 0, sent first", b"rank 1, too late"
    legacy = b"rank 2, stored before digests"
    both = b"rank 3"
    store = store_with(
        tmp_path,
        {
            f"0.{digest(kept)}": kept,
            f"0.{digest(replaced)}": replaced,
            f"1.{digest(late)}": late,
            "2": legacy,
            "3": b"an old copy",  # a legacy name beside the file under its digest
            f"3.{digest(both)}": both,
        },
    )
    store.drop_superseded(
        "t",
        {"t/0": digest(kept), "t/1": digest(b"rank 1"), "t/2": digest(legacy), "t/3": digest(both)},
    )
    left = sorted(path.name for path in (store.blobs / "t").iterdir())
    assert left == sorted([f"0.{digest(kept)}", "2", f"3.{digest(both)}"])
    assert store.path("t/2", digest(legacy)).read_bytes() == legacy


def test_a_folder_never_written_has_nothing_to_drop(tmp_path: Path) -> None:
    store = store_with(tmp_path, {})
    store.drop_superseded("absent", {"absent/0": digest(b"")})
    assert not (store.blobs / "absent").exists()


def test_sizes_are_read_under_the_digest_else_the_legacy_name(tmp_path: Path) -> None:
    store = store_with(tmp_path, {f"0.{digest(b'four')}": b"four", "1": b"legacy!"})
    assert store.size_of("t/0", digest(b"four")) == 4
    assert store.size_of("t/1", digest(b"legacy!")) == 7
    assert store.size_of("t/0", digest(b"other")) is None  # other bytes were never placed
    assert store.size_of("t/2", digest(b"")) is None
