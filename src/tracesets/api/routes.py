"""The traceset routes under /api/v1/tracesets: parse, call the service, render."""

from __future__ import annotations

from functools import partial
from typing import Annotated, Any, Final

import orjson
from fastapi import APIRouter, Depends, Header, Query, Response
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import RedirectResponse

from tracesets.api import render
from tracesets.api.deps import (
    BaseURL,
    Body,
    Caller,
    PromoteWorkspace,
    ReadWorkspace,
    Service,
    WriteWorkspace,
)
from tracesets.api.listquery import ListFilterQuery, refuse_unknown_query
from tracesets.api.openapi import errors, json_body
from tracesets.problems import NotFound, Problem
from tracesets.vocabulary import DEFAULT_SORT, LIST_PAGE_DEFAULT, LIST_PAGE_MAX, Sort
from tracesets.wire import (
    FileList,
    PromotedTraceset,
    RankFiguresPage,
    Traceset,
    TracesetList,
    UploadStatus,
    UploadUrlResponse,
)

router = APIRouter(prefix="/api/v1/tracesets", tags=["tracesets"])


async def checked_traceset_id(traceset_id: str) -> str:
    """The path's id. One holding U+0000 names no traceset (and PostgreSQL cannot compare it)."""
    if "\x00" in traceset_id:
        raise NotFound.of(
            [Problem("id", traceset_id, "No traceset with this id in this workspace")]
        )
    return traceset_id


#: The cursor of every paged route: the ``nextCursor`` its previous page answered.
PageCursor = Annotated[
    str | None, Query(max_length=64, description="nextCursor of the previous page.")
]
#: The list's cursor: a sorted list's holds its sort and a figure too.
ListCursor = Annotated[
    str | None, Query(max_length=128, description="nextCursor of the previous page.")
]
#: How many files a page of files (or of upload status) holds.
FilesLimit = Annotated[
    int, Query(ge=1, le=render.FILES_PAGE_LIMIT, description="Most files a page, 1 to 1,000.")
]
TracesetId = Annotated[str, Depends(checked_traceset_id)]
#: upload-url's header: read by FastAPI for the description, by api.hot to serve.
IDEMPOTENCY_KEY: Final = Header(
    min_length=1,
    max_length=255,
    pattern=r"^[\x21-\x7e]+$",
    description="Retries with the same key and body within 24 hours answer the traceset "
    "the first request made, with fresh URLs; the same key with another body is 422.",
)
IdempotencyKey = Annotated[str | None, IDEMPOTENCY_KEY]
#: upload-url's and add-files' 413: a body too large, or files past the workspace's quota.
PAST_QUOTA: Final[dict[int | str, dict[str, Any]]] = {
    413: {
        **errors(413)[413],
        "description": "The request body is larger than 4 MiB, or the files it declares would "
        "take the workspace past its quota of bytes stored or declared "
        "(`TRACESETS_QUOTA_BYTES`); nothing is stored.",
    }
}


@router.post(
    "/upload-url",
    status_code=201,
    summary="Request upload URLs for a new traceset",
    description="Checks the request and its workloadMetadata against every rule, stores a "
    "pending traceset and answers one signed upload URL per file. Nothing is stored when any "
    "check fails; every problem found is listed.",
    response_model=UploadUrlResponse,
    responses={**errors(400, 401, 403, 408, 413, 415, 422, 429), **PAST_QUOTA},
    openapi_extra=json_body("UploadUrlRequest"),
)
async def request_upload_urls(
    workspace: WriteWorkspace, idempotency_key: IdempotencyKey = None
) -> None:
    """The route's parameters, as the description shows them. ``api.hot`` serves
    it, matched ahead of this declaration (``HotRoute``), without FastAPI's request handling."""


@router.get(
    "/{traceset_id}/uploads",
    summary="What has arrived, and fresh URLs for the rest",
    description="For a pending traceset: the files whose bytes have all arrived, and fresh "
    "upload URLs for every other file (for multipart files, only the parts still missing), so "
    "an interrupted or expired upload resumes instead of starting over. Upload URLs go only "
    "to tokens with the `write` scope; with `read` alone, `uploads` is empty. Files in index "
    "order, a page at a time (up to `limit` files and about 4 MiB of names and URLs): pass "
    "`nextCursor` as `cursor` until it is null.",
    response_model=UploadStatus,
    responses=errors(400, 401, 403, 404, 429),
)
async def get_upload_status(
    service: Service,
    workspace: ReadWorkspace,
    caller: Caller,
    traceset_id: TracesetId,
    base: BaseURL,
    limit: FilesLimit = render.FILES_PAGE_LIMIT,
    cursor: PageCursor = None,
) -> Response:
    status = await run_in_threadpool(
        partial(
            service.upload_status,
            with_urls="write" in caller.scopes,
            cursor=cursor,
            limit=limit,
        ),
        workspace,
        traceset_id,
        base,
    )
    return render.json_response(render.upload_status(status))


@router.post(
    "/{traceset_id}/files",
    status_code=201,
    summary="Add files to a pending traceset",
    description="Declares more files by upload-url's rules and answers an upload entry for "
    "each, as upload-url does: each rank of a job can add its own file. A file declared again "
    "with the same size, role and sha256 is answered again (only what has not arrived; nothing "
    "once all its bytes have); the same name declared otherwise is 409, and so is a stored "
    "name spelled otherwise (up to case or NFC), or a name that would be the folder of a stored "
    "file or lie in one, as is any request once the traceset is no longer pending. Nothing is "
    "added when any check fails.",
    response_model=UploadUrlResponse,
    responses={**errors(400, 401, 403, 404, 408, 409, 413, 415, 429), **PAST_QUOTA},
    openapi_extra=json_body("AddFilesRequest"),
)
async def add_files(
    service: Service, workspace: WriteWorkspace, traceset_id: TracesetId, body: Body, base: BaseURL
) -> Response:
    uploads = await run_in_threadpool(service.add_files, workspace, traceset_id, body, base)
    return render.json_response(render.upload_targets(traceset_id, uploads), 201)


@router.post(
    "/{traceset_id}/complete",
    summary="Complete an upload once every file has arrived",
    description="200 with the traceset, now `ready`; 409 naming each file that has not arrived "
    "whole. Completing a traceset that is already complete answers it unchanged.",
    response_model=Traceset,
    responses=errors(401, 403, 404, 409, 429),
)
async def complete_traceset(
    service: Service, workspace: WriteWorkspace, traceset_id: TracesetId
) -> None:
    """The route's parameters, as the description shows them. ``api.hot`` serves it,
    matched ahead of this declaration (``HotRoute``), without FastAPI's request handling."""


@router.get(
    "/{traceset_id}",
    summary="Read a traceset",
    response_model=Traceset,
    responses=errors(401, 403, 404, 429),
)
async def get_traceset(service: Service, workspace: ReadWorkspace, traceset_id: TracesetId) -> None:
    # The route's parameters, as the description shows them (no docstring: it would be
    # the description). ``api.hot`` serves it, matched ahead of this declaration.
    return None


@router.get(
    "/{traceset_id}/ranks",
    summary="Page through every trace's per-rank figures",
    description="In rank order (traces without a rank last), as in `inspection.perRank`, "
    "which shows only the first 256. Empty until the inspection is done.",
    response_model=RankFiguresPage,
    responses=errors(400, 401, 403, 404, 429),
)
async def list_rank_figures(
    service: Service,
    workspace: ReadWorkspace,
    traceset_id: TracesetId,
    limit: Annotated[int, Query(ge=1, le=1000, description="Page size, 1 to 1,000.")] = 256,
    cursor: PageCursor = None,
) -> Response:
    items, next_cursor = await run_in_threadpool(
        service.rank_page, workspace, traceset_id, limit=limit, cursor=cursor
    )
    return render.json_response(
        {"items": [orjson.Fragment(item) for item in items], "nextCursor": next_cursor}
    )


@router.get(
    "",
    summary="List tracesets, newest first or by a performance figure",
    description="Filters combine with AND. Pages are cursor based: pass `nextCursor` as "
    "`cursor` until it is null, with the same `sort`. A query parameter not listed here is "
    "refused (400, naming it, and the parameter meant when it is a near miss such as "
    "`workloadFamily`). The performance filters and sorts read the figures computed when "
    "the traceset's inspection is done; a traceset without the figure matches none.",
    response_model=TracesetList,
    responses=errors(400, 401, 403, 429),
)
async def list_tracesets(
    service: Service,
    workspace: ReadWorkspace,
    _known: Annotated[None, Depends(refuse_unknown_query)],
    where: ListFilterQuery,
    limit: Annotated[
        int,
        Query(ge=1, le=LIST_PAGE_MAX, description=f"Page size, 1 to {LIST_PAGE_MAX:,}."),
    ] = LIST_PAGE_DEFAULT,
    cursor: ListCursor = None,
    sort: Annotated[
        Sort,
        Query(
            description="-created: newest first. A figure (gpu_idle_pct, comm_overlap_pct, "
            "step_ms): ascending, or descending with a leading -, ties in created order the "
            "same way; only tracesets with that figure are listed."
        ),
    ] = DEFAULT_SORT,
) -> Response:
    if service.reads_inline:  # SQLite: a page is read in less time than the hop to a thread
        page = service.list_page(workspace, where, limit=limit, cursor=cursor, sort=sort)
    else:
        page = await run_in_threadpool(
            partial(service.list_page, workspace, where, limit=limit, cursor=cursor, sort=sort)
        )
    return render.json_response(render.page(page))


@router.post(
    "/{traceset_id}/promote",
    summary="Promote a ready traceset, optionally with new workload metadata",
    description='Body `{}` or `{"workloadMetadata": {…}}`; the new object replaces the stored '
    "one if promotion succeeds, else the stored one is checked. Every check (the upload rules, "
    "the rank-count guard, parallelism degrees, cp and fsdp, shape.rank_count, the typed "
    "descriptive members) is reported together; nothing changes on failure. `warnings` names "
    "descriptive members promotion does not read because of their spelling.",
    response_model=PromotedTraceset,
    responses=errors(400, 401, 403, 404, 408, 409, 413, 415, 429),
    openapi_extra=json_body("PromoteRequest"),
)
async def promote_traceset(
    service: Service, workspace: PromoteWorkspace, traceset_id: TracesetId, body: Body
) -> None:
    """The route's parameters, as the description shows them. ``api.hot`` serves it,
    matched ahead of this declaration (``HotRoute``), without FastAPI's request handling."""


@router.get(
    "/{traceset_id}/files",
    summary="Page through a traceset's files",
    description="The files in index order (the order they were declared in), up to `limit` "
    "(and 2 MiB of JSON) a page. Start without `cursor`, or with the traceset's "
    "`filesNextCursor`; pass `nextCursor` as `cursor` until it is null.",
    response_model=FileList,
    responses=errors(400, 401, 403, 404, 429),
)
async def list_files(
    service: Service,
    workspace: ReadWorkspace,
    traceset_id: TracesetId,
    limit: FilesLimit = render.FILES_PAGE_LIMIT,
    cursor: PageCursor = None,
) -> Response:
    found = await run_in_threadpool(
        service.files_from, workspace, traceset_id, cursor=cursor, limit=limit + 1
    )
    return render.json_response(render.file_list(found, limit))


@router.get(
    "/{traceset_id}/files/{name:path}",
    status_code=307,
    summary="Download a file",
    description="Redirects to a signed download URL for a received file.",
    response_class=RedirectResponse,
    responses={
        307: {"description": "Location holds the signed download URL."},
        **errors(401, 403, 404, 409, 429),
    },
)
async def download_file(
    service: Service, workspace: ReadWorkspace, traceset_id: TracesetId, name: str, base: BaseURL
) -> RedirectResponse:
    url = await run_in_threadpool(service.download_url, workspace, traceset_id, name, base)
    return RedirectResponse(url, status_code=307)


@router.delete(
    "/{traceset_id}",
    status_code=204,
    summary="Delete a traceset and its files",
    response_class=Response,
    responses=errors(401, 403, 404, 429),
)
async def delete_traceset(
    service: Service, workspace: WriteWorkspace, traceset_id: TracesetId
) -> Response:
    await run_in_threadpool(service.delete, workspace, traceset_id)
    return Response(status_code=204)
