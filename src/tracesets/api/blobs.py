"""The signed URLs the service serves itself (local storage): file bytes in and out.

These routes take no bearer token: the URL's signature and expiry are its authority.
"""

from __future__ import annotations

import posixpath
from typing import Annotated, Any, Final

from fastapi import APIRouter, Depends, Path, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import FileResponse

from tracesets.api.openapi import errors
from tracesets.problems import Forbidden, NotFound, Problem
from tracesets.service.transfers import LocalTransfers
from tracesets.storage.signing import parse_index

BLOB_ROUTE: Final = "/api/v1/blobs"

router = APIRouter(prefix=BLOB_ROUTE, tags=["signed-urls"])


async def get_transfers(request: Request) -> LocalTransfers:
    """The local store's transfers; with S3 these URLs do not exist (clients use S3's)."""
    transfers: LocalTransfers | None = request.app.state.transfers
    if transfers is None:
        raise NotFound.of(
            [Problem("path", request.url.path, "Files are in S3: use the URLs it signs")]
        )
    return transfers


Transfers = Annotated[LocalTransfers, Depends(get_transfers)]


async def file_index(
    idx: Annotated[str, Path(description="The file's index, in plain decimal as signed.")],
) -> int:
    """The path's index, only as the service writes it: ``00``, ``+0`` or ``0.0`` was not signed."""
    index = parse_index(idx)
    if index is None:
        raise Forbidden.of(
            [Problem("idx", idx, "The URL was altered: its file index is not the one signed")]
        )
    return index


Index = Annotated[int, Depends(file_index)]

Expires = Annotated[str | None, Query(description="Expiry, as a Unix time; part of the signature.")]
Signature = Annotated[str | None, Query(description="HMAC-SHA256 of method, file and expiry.")]

#: With S3 storage these routes do not serve files: every request to them is 404.
_NOT_HERE: dict[int | str, dict[str, Any]] = {
    404: {
        **errors(404)[404],
        "description": "No such file, or its traceset was deleted. With S3 storage, every "
        "request: the files are in S3, at the URLs S3 signs.",
    }
}


@router.put(
    "/{traceset_id}/{idx}",
    summary="Upload a file's bytes to its signed URL",
    description="The body is the file's exact bytes. Accepted only if the byte count equals "
    "the declared size and, where a sha256 was declared, the digest matches; otherwise 400 and "
    "nothing is kept. Sending the same bytes again is harmless. Once the traceset is "
    "complete its bytes are fixed: other bytes answer 409 and are not kept, even when their "
    "upload began before `complete`. A body that stops arriving, or arrives slower than "
    "the service's minimum rate, is cut (408). Past the uploads one process receives at "
    "once, or past its share of them (one upload of a file at a time, a traceset's at most "
    "half), an upload waits a few seconds for one to end (its body unread), then gets 503 "
    "with Retry-After.",
    responses={
        200: {"description": "The file arrived whole."},
        **errors(400, 403, 408, 409, 503),
        **_NOT_HERE,
    },
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {
                "application/octet-stream": {"schema": {"type": "string", "format": "binary"}}
            },
        }
    },
)
async def upload_file(
    request: Request,
    transfers: Transfers,
    traceset_id: str,
    idx: Index,
    expires: Expires = None,
    signature: Signature = None,
) -> None:
    """The route's parameters, as the description shows them. ``api.hot`` serves it,
    matched ahead of this declaration (``HotRoute``), without FastAPI's request handling."""


@router.get(
    "/{traceset_id}/{idx}",
    summary="Download a file's bytes from its signed URL",
    response_class=FileResponse,
    responses={200: {"description": "The file's bytes."}, **errors(403), **_NOT_HERE},
)
async def download_signed_file(
    transfers: Transfers,
    traceset_id: str,
    idx: Index,
    expires: Expires = None,
    signature: Signature = None,
) -> FileResponse:
    signed = transfers.verify("GET", traceset_id, idx, expires, signature)
    file, path = await run_in_threadpool(transfers.download, signed)
    return FileResponse(
        path, media_type="application/octet-stream", filename=posixpath.basename(file.name)
    )
