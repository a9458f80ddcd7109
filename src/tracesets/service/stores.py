"""The file store the settings name, for the service and for ``tracesets worker`` alike."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tracesets.settings import Settings
from tracesets.storage.local import LocalBlobStore
from tracesets.storage.signing import URLSigner

if TYPE_CHECKING:
    from tracesets.storage.s3 import S3BlobStore


def open_store(settings: Settings, *, url_path: str | None = None) -> S3BlobStore | LocalBlobStore:
    """S3 when ``TRACESETS_STORAGE_URL`` names a bucket (checked reachable), else the data
    folder's files, signing URLs under ``url_path`` (where the service serves them; a
    worker signs none)."""
    if settings.storage_url is not None:
        from tracesets.storage.s3 import S3BlobStore  # boto3 costs ~10 MB: only when used

        s3 = S3BlobStore(
            settings.storage_url,
            upload_ttl=settings.upload_url_ttl,
            download_ttl=settings.download_url_ttl,
            multipart_threshold=settings.multipart_threshold,
            part_size=settings.part_size,
        )
        s3.check()
        return s3
    return LocalBlobStore(
        settings.data_dir,
        URLSigner(settings.signing_secret()),
        url_path=url_path,
        upload_ttl=settings.upload_url_ttl,
        download_ttl=settings.download_url_ttl,
    )
