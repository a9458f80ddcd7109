"""The Python client against a real service process: every method, typed results, refusals."""

from __future__ import annotations

import asyncio
import hashlib
import os
from pathlib import Path

import httpx
import pytest

import tracesets
from tests.client.conftest import MakeClient
from tests.server import ServerProcess, multipart_threshold
from tracesets import AsyncClient, Client, ClientError, PromotedTraceset, Traceset
from tracesets.client import UploadUrlResponse

RANKS_4 = {"shape": {"rankCount": 4}}


@pytest.fixture
def client(server: ServerProcess, workspace_token: str, make_client: MakeClient) -> Client:
    return make_client(server.url, workspace_token)


def make_run(root: Path, sizes: dict[str, int]) -> dict[str, bytes]:
    made = {}
    for name, size in sizes.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        data = os.urandom(size)
        path.write_bytes(data)
        made[name] = data
    return made


def test_upload_a_directory_returns_the_ready_traceset(client: Client, tmp_path: Path) -> None:
    run = tmp_path / "run-42"
    made = make_run(
        run,
        {"rank0.json": 300_000, "rank1.json": 2_500_000, "empty.json": 0, "logs/train.log": 1_000},
    )
    seen: list[tuple[int, int]] = []
    hashed: list[tuple[int, int]] = []
    traceset = client.upload(
        run,
        name="GPT, 4 ranks",
        workload_metadata={**RANKS_4, "workload_family": "gpt"},
        supporting=[run / "logs"],
        progress=lambda done, total: seen.append((done, total)),
        hash_progress=lambda done, total: hashed.append((done, total)),
    )
    assert isinstance(traceset, Traceset)
    assert traceset.status == "ready" and traceset.rankCountDerived == 4
    assert traceset.workloadMetadata == {**RANKS_4, "workload_family": "gpt"}
    files = {f.name: f for f in traceset.files}
    assert set(files) == set(made)
    assert files["logs/train.log"].role == "supporting" and files["rank0.json"].role == "primary"
    for name, data in made.items():
        assert files[name].received and files[name].size == len(data)
        assert files[name].sha256 == hashlib.sha256(data).hexdigest()
    total = sum(len(d) for d in made.values())
    assert seen[0] == (0, total) and seen[-1] == (total, total)
    assert all(0 <= done <= total for done, _ in seen)
    assert hashed[-1] == (total, total)


def test_upload_of_single_files_names_them_by_file_name(client: Client, tmp_path: Path) -> None:
    made = make_run(tmp_path, {"a/traces.zip": 10, "b/config.yaml": 5})
    traceset = client.upload(
        tmp_path / "a" / "traces.zip",
        name="zip",
        workload_metadata={"parallelism": {"dp": 2, "tp": 2}},
        supporting=tmp_path / "b" / "config.yaml",
    )
    assert [(f.name, f.role) for f in traceset.files] == [
        ("traces.zip", "primary"),
        ("config.yaml", "supporting"),
    ]
    assert traceset.rankCountDerived == 4 and len(made) == 2


def test_unsafe_and_colliding_file_names_are_refused_before_any_request(
    tmp_path: Path, unreachable: str, make_client: MakeClient
) -> None:
    """A folder made on Linux can hold both: the client refuses it as the service would."""
    (tmp_path / "Rank0.json").write_bytes(b"{}")
    (tmp_path / "rank0.json").write_bytes(b"{}")
    (tmp_path / "line\nbreak.json").write_bytes(b"{}")
    nowhere = make_client(unreachable, "tsk_unused")
    with pytest.raises(ClientError) as caught:
        nowhere.upload(tmp_path, name="bad", workload_metadata=RANKS_4)
    error = caught.value
    assert error.status == 400 and error.sent is False
    messages = [p.message for p in error.problems]
    assert len(messages) == 2
    assert sum("DEL…); U+000A at character 5 is one" in m for m in messages) == 1
    assert sum("differs only in case" in m for m in messages) == 1


def test_rules_refuse_before_any_request(
    tmp_path: Path, unreachable: str, make_client: MakeClient
) -> None:
    """Nothing listens at the URL: the refusal can only come from the local rules."""
    (tmp_path / "r0.json").write_bytes(b"{}")
    nowhere = make_client(unreachable, "tsk_unused")
    with pytest.raises(ClientError) as caught:
        nowhere.upload(
            tmp_path,
            name="bad",
            workload_metadata={"shape": {"rankCount": 6}, "parallelism": {"dp": 0, "tp": 2.0}},
        )
    error = caught.value
    assert error.status == 400 and error.sent is False
    assert [(p.member, p.value) for p in error.problems] == [
        ("workloadMetadata.parallelism.dp", 0),
        ("workloadMetadata.parallelism.tp", 2.0),
    ]
    assert error.problems[0].message == (
        "workloadMetadata.parallelism.dp must be a whole number of at least 1; got 0"
    )
    assert str(error) == "\n".join(p.message for p in error.problems)  # every problem, a line


def test_missing_rank_count_is_refused_with_the_source_documents_words(
    tmp_path: Path, unreachable: str, make_client: MakeClient
) -> None:
    (tmp_path / "traces.zip").write_bytes(b"x")
    with pytest.raises(ClientError) as caught:
        make_client(unreachable, "t").upload(tmp_path, name="n")
    assert caught.value.detail.startswith(
        "Uploads with primary trace files must declare a rank count"
    )


def test_service_refusals_carry_the_problem_details(
    client: Client, server: ServerProcess, make_client: MakeClient
) -> None:
    with pytest.raises(ClientError) as caught:
        client.get_traceset("no-such-traceset")
    assert caught.value.status == 404 and caught.value.sent
    assert caught.value.type == "urn:tracesets:problem:not-found"
    assert caught.value.problems[0].member == "id"
    with pytest.raises(ClientError) as caught:
        list(make_client(server.url, "tsk_wrong_token_0000000000").list_tracesets())
    assert caught.value.status == 401


def test_nothing_listening_is_a_client_error_without_status(
    unreachable: str, make_client: MakeClient
) -> None:
    from tracesets.client import RetryPolicy

    nowhere = make_client(unreachable, "t", retry=RetryPolicy(retries=1, backoff=0))
    with pytest.raises(ClientError) as caught:
        nowhere.get_traceset("x")
    assert caught.value.status is None and "no answer" in str(caught.value)


def test_a_missing_token_is_named_before_sending(
    server: ServerProcess, monkeypatch: pytest.MonkeyPatch, make_client: MakeClient
) -> None:
    for name in ("TRACESETS_TOKEN", "SCALA_API_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ClientError, match="TRACESETS_TOKEN") as caught:
        make_client(server.url).get_traceset("x")
    assert caught.value.sent is False


@pytest.mark.parametrize("variable", ["TRACESETS_TOKEN", "SCALA_API_TOKEN"])
def test_url_and_token_come_from_the_environment(
    server: ServerProcess,
    workspace_token: str,
    monkeypatch: pytest.MonkeyPatch,
    variable: str,
    make_client: MakeClient,
) -> None:
    for name in ("TRACESETS_TOKEN", "SCALA_API_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TRACESETS_URL", server.url + "/api/v1/")
    monkeypatch.setenv(variable, workspace_token)
    with make_client() as client:
        assert client.url == server.url
        assert list(client.list_tracesets()) == []


def test_request_upload_urls_is_typed_and_idempotent(client: Client) -> None:
    files = [{"name": "traces.zip", "size": 3, "role": "primary"}]
    first = client.request_upload_urls(
        name="t", files=files, workload_metadata=RANKS_4, idempotency_key="key-1"
    )
    assert isinstance(first, UploadUrlResponse)
    [target] = first.uploads
    assert target.name == "traces.zip" and target.url is not None and target.method == "PUT"
    again = client.request_upload_urls(
        name="t", files=files, workload_metadata=RANKS_4, idempotency_key="key-1"
    )
    assert again.tracesetId == first.tracesetId
    with pytest.raises(ClientError) as caught:
        client.request_upload_urls(
            name="other", files=files, workload_metadata=RANKS_4, idempotency_key="key-1"
        )
    assert caught.value.status == 422 and caught.value.problems[0].member == "Idempotency-Key"
    fresh = client.request_upload_urls(name="t", files=files, workload_metadata=RANKS_4)
    assert fresh.tracesetId != first.tracesetId
    assert len(list(client.list_tracesets())) == 2


def test_list_visits_every_page_and_filters(client: Client, tmp_path: Path) -> None:
    (tmp_path / "a").write_bytes(b"a")
    made = []
    for i in range(5):
        family = "gpt" if i % 2 == 0 else "llama"
        metadata = {
            "workload_family": family,
            "workload_name": f"w{i}",
            "shape": {"rankCount": 2, "global_batch_size": 64 * (i % 2 + 1)},
        }
        made.append(client.upload(tmp_path / "a", name=f"t{i}", workload_metadata=metadata).id)
    assert [t.id for t in client.list_tracesets(page_size=2)] == made[::-1]
    assert [t.id for t in client.list_tracesets(workload_family="gpt", page_size=1)] == [
        made[4],
        made[2],
        made[0],
    ]
    assert [t.id for t in client.list_tracesets(workload_name="w3")] == [made[3]]
    assert [t.id for t in client.list_tracesets(global_batch_size=128)] == [made[3], made[1]]
    assert [t.id for t in client.list_tracesets(workload_family="gpt", global_batch_size=128)] == []
    assert len(list(client.list_tracesets(status="ready", rank_count=2))) == 5
    assert list(client.list_tracesets(status="promoted")) == []


def test_promote_traceset(client: Client, tmp_path: Path) -> None:
    (tmp_path / "a").write_bytes(b"a")
    traceset = client.upload(tmp_path / "a", name="p", workload_metadata=RANKS_4)
    promoted = client.promote_traceset(traceset.id, {**RANKS_4, "workloadFamily": "gpt"})
    assert isinstance(promoted, PromotedTraceset)
    assert promoted.status == "promoted" and promoted.promotedAt is not None
    assert promoted.warnings and "workload_family" in promoted.warnings[0]
    assert client.get_traceset(traceset.id).workloadMetadata == {**RANKS_4, "workloadFamily": "gpt"}
    with pytest.raises(ClientError) as caught:
        client.promote_traceset(traceset.id, {"shape": {"rankCount": 8}})
    assert caught.value.status == 400
    assert caught.value.problems[0].member.startswith("workloadMetadata")
    assert client.promote_traceset(traceset.id).status == "promoted"


def test_promote_a_pending_traceset_is_a_conflict(client: Client) -> None:
    created = client.request_upload_urls(
        name="p", files=[{"name": "a", "size": 1, "role": "primary"}], workload_metadata=RANKS_4
    )
    with pytest.raises(ClientError) as caught:
        client.promote_traceset(created.tracesetId)
    assert caught.value.status == 409


def test_download_streams_to_a_folder_or_a_path(client: Client, tmp_path: Path) -> None:
    made = make_run(tmp_path / "up", {"logs/big.bin": 3_000_000})
    traceset = client.upload(tmp_path / "up", name="d", workload_metadata=RANKS_4)
    [file] = traceset.files
    into = tmp_path / "down"
    into.mkdir()
    saved = client.download(traceset.id, "logs/big.bin", into, sha256=file.sha256)
    assert saved == into / "big.bin" and saved.read_bytes() == made["logs/big.bin"]
    named = client.download(traceset.id, "logs/big.bin", tmp_path / "copy.bin")
    assert named.read_bytes() == made["logs/big.bin"]
    with pytest.raises(ClientError, match="sha256"):
        client.download(traceset.id, "logs/big.bin", tmp_path / "bad.bin", sha256="0" * 64)
    assert not (tmp_path / "bad.bin").exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".part")] == []
    with pytest.raises(ClientError) as caught:
        client.download(traceset.id, "no/such", tmp_path)
    assert caught.value.status == 404


def test_delete_traceset(client: Client, tmp_path: Path) -> None:
    (tmp_path / "a").write_bytes(b"a")
    traceset = client.upload(tmp_path / "a", name="x", workload_metadata=RANKS_4)
    client.delete_traceset(traceset.id)
    with pytest.raises(ClientError) as caught:
        client.get_traceset(traceset.id)
    assert caught.value.status == 404


def test_async_client_does_the_same(
    server: ServerProcess, workspace_token: str, tmp_path: Path
) -> None:
    made = make_run(tmp_path / "run", {"a.json": 1_500_000, "b/c.json": 10})

    async def scenario() -> None:
        async with AsyncClient(server.url, workspace_token, concurrency=2) as client:
            seen: list[int] = []
            traceset = await client.upload(
                tmp_path / "run",
                name="async",
                workload_metadata={**RANKS_4, "workload_family": "gpt"},
                progress=lambda done, total: seen.append(done),
            )
            assert traceset.status == "ready" and seen[-1] == sum(map(len, made.values()))
            assert [t.id async for t in client.list_tracesets(workload_family="gpt")] == [
                traceset.id
            ]
            promoted = await client.promote_traceset(traceset.id)
            assert promoted.status == "promoted"
            saved = await client.download(traceset.id, "b/c.json", tmp_path / "c.json")
            assert saved.read_bytes() == made["b/c.json"]
            with pytest.raises(ClientError) as caught:
                await client.upload(
                    tmp_path / "run", name="bad", workload_metadata={"shape": {"rankCount": "4"}}
                )
            assert caught.value.sent is False
            await client.delete_traceset(traceset.id)
            with pytest.raises(ClientError):
                await client.get_traceset(traceset.id)

    asyncio.run(scenario())


def test_the_package_exports_the_client() -> None:
    assert tracesets.Client is Client and tracesets.ClientError is ClientError
    assert issubclass(ClientError, Exception) and not issubclass(ClientError, httpx.HTTPError)


class RefusesPutsOf(httpx.BaseTransport):
    """The real transport, except that PUTs of one file's URL are refused (403)."""

    def __init__(self, index: int) -> None:
        self.real = httpx.HTTPTransport()
        self.index = index

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if request.method == "PUT" and request.url.path.endswith(f"/{self.index}"):
            return httpx.Response(403, text="refused by the test")
        return self.real.handle_request(request)


def test_an_interrupted_upload_resumes(
    server: ServerProcess, workspace_token: str, tmp_path: Path, make_client: MakeClient
) -> None:
    made = make_run(tmp_path / "run", {"a.bin": 300_000, "b.bin": 200_000, "c.bin": 10})
    metadata = {"shape": {"rankCount": 3}}
    # One PUT at a time, largest first: a.bin and b.bin arrive, then c.bin is refused.
    with (
        make_client(
            server.url, workspace_token, transport=RefusesPutsOf(2), concurrency=1
        ) as broken,
        pytest.raises(ClientError) as caught,
    ):
        broken.upload(tmp_path / "run", name="r", workload_metadata=metadata)
    pending = caught.value.traceset_id
    assert pending is not None and caught.value.status == 403
    with make_client(server.url, workspace_token) as client:
        status = client.upload_status(pending)
        assert status.status == "pending" and [u.name for u in status.uploads] == ["c.bin"]
        assert sorted(status.received) == ["a.bin", "b.bin"]
        (tmp_path / "other").mkdir()
        (tmp_path / "other" / "c.bin").write_bytes(os.urandom(10))
        with pytest.raises(ClientError, match="not the file the traceset declared"):
            client.resume_upload(pending, tmp_path / "other")
        seen: list[tuple[int, int]] = []
        traceset = client.resume_upload(
            pending, tmp_path / "run", progress=lambda done, total: seen.append((done, total))
        )
        assert traceset.status == "ready" and seen[-1] == (10, 10)
        assert {f.name: f.sha256 for f in traceset.files} == {
            name: hashlib.sha256(data).hexdigest() for name, data in made.items()
        }
        assert client.resume_upload(pending, tmp_path / "run").status == "ready"


def test_a_large_file_arrives_whole(client: Client, tmp_path: Path) -> None:
    """On S3 storage above the multipart threshold, in parts; on local storage, one PUT."""
    made = make_run(tmp_path / "run", {"big.bin": 12 * 1024 * 1024 + 17, "small.bin": 5})
    created = client.request_upload_urls(
        name="peek",
        files=[{"name": "big.bin", "size": 12 * 1024 * 1024 + 17, "role": "primary"}],
        workload_metadata=RANKS_4,
    )
    target = created.uploads[0]
    assert (target.url is None) == bool(target.parts)
    threshold = multipart_threshold()  # None on local files
    if threshold is not None and threshold < 12 * 1024 * 1024:
        assert target.parts is not None and len(target.parts) >= 2
    seen: list[int] = []
    traceset = client.upload(
        tmp_path / "run",
        name="big",
        workload_metadata=RANKS_4,
        progress=lambda d, t: seen.append(d),
    )
    assert traceset.status == "ready" and seen[-1] == sum(map(len, made.values()))
    back = client.download(traceset.id, "big.bin", tmp_path / "back.bin")
    assert back.read_bytes() == made["big.bin"]
