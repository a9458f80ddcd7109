"""A checked signature is proof of one method: a download URL cannot upload, nor the
reverse, and a forged URL yields no proof at all."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tracesets.api.blobs import BLOB_ROUTE
from tracesets.db.engine import Database, sqlite_url
from tracesets.problems import Forbidden
from tracesets.service.transfers import LocalTransfers
from tracesets.storage.base import blob_key
from tracesets.storage.local import LocalBlobStore
from tracesets.storage.signing import Method, URLSigner

SIGNER = URLSigner(b"k" * 32)


@pytest.fixture
def transfers(tmp_path: Path) -> LocalTransfers:
    db = Database(sqlite_url(tmp_path))
    db.migrate()
    return LocalTransfers(
        db, LocalBlobStore(tmp_path / "files", SIGNER, url_path=BLOB_ROUTE), SIGNER
    )


def signed_query(method: Method, traceset_id: str, idx: int) -> tuple[str, str]:
    query, _ = SIGNER.query(method, blob_key(traceset_id, idx), 60)
    fields = dict(part.split("=", 1) for part in query.split("&"))
    return fields["expires"], fields["signature"]


async def _nothing() -> AsyncIterator[bytes]:
    yield b""


def test_a_download_url_is_no_proof_for_an_upload(transfers: LocalTransfers) -> None:
    expires, signature = signed_query("GET", "t1", 0)
    signed = transfers.verify("GET", "t1", 0, expires, signature)
    with pytest.raises(ValueError, match="GET URL cannot upload"):
        asyncio.run(transfers.receive(signed, _nothing()))
    with pytest.raises(Forbidden):
        transfers.verify("PUT", "t1", 0, expires, signature)


def test_an_upload_url_is_no_proof_for_a_download(transfers: LocalTransfers) -> None:
    expires, signature = signed_query("PUT", "t1", 0)
    signed = transfers.verify("PUT", "t1", 0, expires, signature)
    with pytest.raises(ValueError, match="PUT URL cannot download"):
        transfers.download(signed)
    with pytest.raises(Forbidden):
        transfers.verify("GET", "t1", 0, expires, signature)
