"""A whole traceset's download: in parallel, resumable, every file checked against its sha256.

A transport wrapped around the real one sees the storage GETs (any GET outside the API's
``/tracesets`` routes): it holds them at a barrier to prove they run at once, counts them
to prove what a resume skips, and corrupts one to prove a mismatch is refused.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import threading
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from tests.client.conftest import MakeClient
from tests.server import ServerProcess
from tracesets import AsyncClient, Client, ClientError, Traceset

RANKS_4 = {"shape": {"rankCount": 4}}


def storage_get(request: httpx.Request) -> bool:
    return request.method == "GET" and "/tracesets" not in request.url.path


class Watching(httpx.HTTPTransport):
    """The real transport, with a hook on every storage GET and a count of them."""

    def __init__(self, hook: Callable[[httpx.Request], object] = lambda _: None) -> None:
        super().__init__()
        self.hook = hook
        self.fetched: list[str] = []
        self._lock = threading.Lock()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if storage_get(request):
            with self._lock:
                self.fetched.append(str(request.url))
            self.hook(request)
        return super().handle_request(request)


class Corrupting(httpx.HTTPTransport):
    """The real transport, with the first byte of every storage GET's answer flipped."""

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = super().handle_request(request)
        if not storage_get(request) or response.status_code != 200:
            return response
        data = bytearray(response.read())
        response.close()
        if data:
            data[0] ^= 0xFF
        return httpx.Response(200, headers={"content-length": str(len(data))}, content=bytes(data))


def uploaded(server: ServerProcess, token: str, root: Path, sizes: dict[str, int]) -> Traceset:
    for name, size in sizes.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(os.urandom(size))
    with Client(server.url, token) as client:
        return client.upload(root, name="down", workload_metadata=RANKS_4)


def same_tree(a: Path, b: Path) -> bool:
    files = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    theirs = sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file())
    return files == theirs and all((a / f).read_bytes() == (b / f).read_bytes() for f in files)


def test_many_files_download_several_at_once(
    server: ServerProcess, workspace_token: str, tmp_path: Path, make_client: MakeClient
) -> None:
    # 24 files, four at a time: six meetings of four.
    sizes = {f"rank-{r:03d}.json": 1_000 + r for r in range(23)} | {"logs/a.log": 70_000}
    traceset = uploaded(server, workspace_token, tmp_path / "up", sizes)
    # Every storage GET waits until four are in flight: one at a time would break it.
    meeting = threading.Barrier(4, timeout=30)
    transport = Watching(lambda _: meeting.wait())
    seen: list[tuple[int, int]] = []
    with make_client(server.url, workspace_token, concurrency=4, transport=transport) as client:
        done = client.download_traceset(
            traceset.id, tmp_path / "down", progress=lambda d, t: seen.append((d, t))
        )
    assert same_tree(tmp_path / "up", tmp_path / "down")
    total = sum(sizes.values())
    assert (done.downloaded, done.skipped, done.bytes) == (24, 0, total)
    assert seen[0] == (0, total) and seen[-1] == (total, total)
    assert not meeting.broken
    assert [p for p in (tmp_path / "down").rglob("*.part")] == []


def test_a_second_run_skips_what_is_there_and_replaces_what_is_wrong(
    server: ServerProcess, workspace_token: str, tmp_path: Path, make_client: MakeClient
) -> None:
    sizes = {"a.json": 5_000, "b.json": 6_000, "c/d.json": 7_000, "e.json": 8_000}
    traceset = uploaded(server, workspace_token, tmp_path / "up", sizes)
    down = tmp_path / "down"
    with make_client(server.url, workspace_token) as client:
        first = client.download_traceset(traceset.id, down, names=["a.json", "c/d.json"])
    assert (first.downloaded, first.skipped) == (2, 0)
    # A corrupted file of the right size, a truncated one, a stray partial from a crash.
    corrupt = bytearray((down / "a.json").read_bytes())
    corrupt[100] ^= 0x01
    (down / "a.json").write_bytes(bytes(corrupt))
    (down / "b.json").write_bytes((tmp_path / "up" / "b.json").read_bytes()[:3_000])
    transport = Watching()
    with make_client(server.url, workspace_token, transport=transport) as client:
        second = client.download_traceset(traceset.id, down)
    assert (second.downloaded, second.skipped) == (3, 1)
    assert second.bytes == 5_000 + 6_000 + 8_000
    assert len(transport.fetched) == 3
    assert same_tree(tmp_path / "up", down)
    transport = Watching()
    with make_client(server.url, workspace_token, transport=transport) as client:
        third = client.download_traceset(traceset.id, down)
    assert (third.downloaded, third.skipped, third.bytes) == (0, 4, 0)
    assert transport.fetched == []


def test_a_mismatch_names_the_file_and_leaves_nothing_under_its_name(
    server: ServerProcess, workspace_token: str, tmp_path: Path, make_client: MakeClient
) -> None:
    traceset = uploaded(server, workspace_token, tmp_path / "up", {"only.json": 4_000})
    down = tmp_path / "down"
    down.mkdir()
    (down / "only.json").write_bytes(b"stale")
    with (
        make_client(server.url, workspace_token, transport=Corrupting()) as client,
        pytest.raises(ClientError, match=r"only\.json") as caught,
    ):
        client.download_traceset(traceset.id, down)
    expected = hashlib.sha256((tmp_path / "up" / "only.json").read_bytes()).hexdigest()
    assert expected in str(caught.value)
    assert list(down.iterdir()) == []


def test_a_name_not_in_the_traceset_is_refused_before_any_byte(
    server: ServerProcess, workspace_token: str, tmp_path: Path, make_client: MakeClient
) -> None:
    traceset = uploaded(server, workspace_token, tmp_path / "up", {"a.json": 10})
    transport = Watching()
    with (
        make_client(server.url, workspace_token, transport=transport) as client,
        pytest.raises(ClientError, match="'nope'"),
    ):
        client.download_traceset(traceset.id, tmp_path / "down", names=["a.json", "nope"])
    assert transport.fetched == [] and not (tmp_path / "down").exists()


def test_async_client_downloads_the_same_way(
    server: ServerProcess, workspace_token: str, tmp_path: Path
) -> None:
    sizes = {f"r{r}.json": 2_000 + r for r in range(6)}
    traceset = uploaded(server, workspace_token, tmp_path / "up", sizes)
    down = tmp_path / "down"
    down.mkdir()
    (down / "r0.json").write_bytes((tmp_path / "up" / "r0.json").read_bytes())
    (down / "r1.json").write_bytes(b"x" * sizes["r1.json"])

    async def scenario() -> None:
        async with AsyncClient(server.url, workspace_token, concurrency=3) as client:
            done = await client.download_traceset(traceset.id, down)
            assert (done.downloaded, done.skipped) == (5, 1)
            assert done.bytes == sum(sizes.values()) - sizes["r0.json"]
        async with AsyncClient(server.url, workspace_token) as client:
            again = await client.download_traceset(await client.get_traceset(traceset.id), down)
            assert (again.downloaded, again.skipped) == (0, 6)

    asyncio.run(scenario())
    assert same_tree(tmp_path / "up", down)
