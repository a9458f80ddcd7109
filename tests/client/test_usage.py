"""``usage()`` on both clients, and a quota's refusal as the client reports it."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.client.conftest import MakeClient
from tests.server import ServerProcess
from tracesets import ClientError

RANKS_2 = {"shape": {"rankCount": 2}}


def test_usage_reads_the_workspace(
    server: ServerProcess, workspace_token: str, make_client: MakeClient, tmp_path: Path
) -> None:
    (tmp_path / "rank0.json").write_bytes(b"a" * 100)
    (tmp_path / "rank1.json").write_bytes(b"b" * 23)
    client = make_client(server.url, workspace_token)
    before = client.usage()
    assert (before.files, before.bytesStored, before.quotaBytes) == (0, 0, None)
    client.upload(tmp_path, name="two ranks", workload_metadata=RANKS_2)
    after = client.usage()
    assert after.tracesets.model_dump() == {"pending": 0, "ready": 1, "promoted": 0}
    assert (after.files, after.bytesStored, after.bytesPending) == (2, 123, 0)


@pytest.fixture(scope="module")
def small_quota(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    process = ServerProcess(
        tmp_path_factory.mktemp("quota"), extra_env={"TRACESETS_QUOTA_BYTES": "100"}
    )
    process.start()
    yield process
    process.stop()


def test_an_upload_past_the_quota_is_refused_before_a_byte_is_sent(
    small_quota: ServerProcess, make_client: MakeClient, tmp_path: Path
) -> None:
    (tmp_path / "rank0.json").write_bytes(b"a" * 60)
    (tmp_path / "rank1.json").write_bytes(b"b" * 60)
    client = make_client(small_quota.url, small_quota.new_token("ws-" + secrets.token_hex(6)))
    with pytest.raises(ClientError) as refused:
        client.upload(tmp_path, name="too big", workload_metadata=RANKS_2)
    assert refused.value.status == 413
    assert "past its quota of 100 bytes" in str(refused.value)
    assert client.usage().model_dump() == {
        "tracesets": {"pending": 0, "ready": 0, "promoted": 0},
        "files": 0,
        "bytesStored": 0,
        "bytesPending": 0,
        "quotaBytes": 100,
    }
