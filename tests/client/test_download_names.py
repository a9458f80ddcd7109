"""A download never shares a partial file between two files, and a traceset stored before
names had one spelling each is saved whole or not at all: two of its names that are one
path are refused before any byte, and each then downloads alone."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from tests.client.conftest import MakeClient
from tests.client.test_download import Watching, uploaded
from tests.server import ServerProcess
from tracesets import ClientError
from tracesets.client.files import Download
from tracesets.db.engine import normalize_url


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_two_downloads_to_one_target_each_write_their_own_partial(tmp_path: Path) -> None:
    target = tmp_path / "down" / "rank0.json"
    first, second = Download(target, digest(b"first")), Download(target, digest(b"other"))
    assert first.partial != second.partial and first.partial.parent == target.parent
    first.write(b"first")
    second.write(b"other")
    assert second.finish() == target and target.read_bytes() == b"other"
    assert first.finish() == target and target.read_bytes() == b"first"
    assert list(target.parent.iterdir()) == [target]


def rename(server: ServerProcess, renamed: dict[str, str]) -> None:
    """Give stored files names the service now refuses, as if stored before its rules."""
    url = server.env.get("DATABASE_URL") or f"sqlite:///{server.data_dir / 'tracesets.db'}"
    engine = create_engine(normalize_url(url))
    try:
        with engine.begin() as conn:
            for old, new in renamed.items():
                conn.execute(
                    text("UPDATE files SET name = :new WHERE name = :old"),
                    {"old": old, "new": new},
                )
    finally:
        engine.dispose()


@pytest.mark.parametrize(
    "renamed",
    [
        {"a/c.json": "a//b.json"},
        {"a/c.json": "./a/b.json"},
        {"a/c.json": "A/B.json"},
        {"a/c.json": "a/b.json/c"},
    ],
    ids=["empty-segment", "dot-segment", "case", "file-and-folder"],
)
def test_names_of_one_path_are_refused_before_any_byte_then_each_downloads_alone(
    server: ServerProcess,
    workspace_token: str,
    tmp_path: Path,
    make_client: MakeClient,
    renamed: dict[str, str],
) -> None:
    sizes = {"a/b.json": 3_000, "a/c.json": 4_000, "z.json": 10}
    traceset = uploaded(server, workspace_token, tmp_path / "up", sizes)
    rename(server, renamed)
    [(old, new)] = renamed.items()
    transport = Watching()
    down = tmp_path / "down"
    with make_client(server.url, workspace_token, transport=transport) as client:
        with pytest.raises(ClientError, match="would be saved as one path") as refused:
            client.download_traceset(traceset.id, down)
        assert {"'a/b.json'", repr(new)} == set(
            str(refused.value).split(" would")[0].split(" and ")
        )
        assert transport.fetched == [] and not down.exists()
        client.download_traceset(traceset.id, down, names=["a/b.json", "z.json"])
        client.download_traceset(traceset.id, tmp_path / "apart", names=[new])
    assert (down / "a" / "b.json").read_bytes() == (tmp_path / "up" / "a" / "b.json").read_bytes()
    apart = tmp_path / "apart" / Path(*Path(new).parts)
    assert apart.read_bytes() == (tmp_path / "up" / old).read_bytes()
    assert sorted(p.name for p in down.rglob("*")) == ["a", "b.json", "z.json"]
