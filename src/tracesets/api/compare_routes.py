"""The comparison routes under /api/v1/tracesets/{id}/compare: parse, call the service, render."""

from __future__ import annotations

from functools import partial
from typing import Annotated, Final, Literal

from fastapi import APIRouter, Query, Response
from fastapi.concurrency import run_in_threadpool

from tracesets.api import render
from tracesets.api.deps import ReadWorkspace, Service
from tracesets.api.openapi import errors
from tracesets.api.routes import PageCursor, TracesetId
from tracesets.wire import ComparedKernelsPage, ComparedOperatorsPage, ComparedRanksPage, Comparison

router = APIRouter(prefix="/api/v1/tracesets", tags=["tracesets"])

PATH: Final = "/{traceset_id}/compare/{baseline_id}"
#: Both tracesets in the caller's workspace, both inspected.
TERMS: Final = (
    "Both tracesets must be in the caller's workspace (404 naming `tracesetId` or "
    "`baselineId` otherwise) and inspected (409 naming which is not: still uploading, "
    "inspection pending or failed); comparing a traceset with itself is 400. The figures "
    "are the ones inspection stored; no trace is read again."
)
RowsLimit = Annotated[int, Query(ge=1, le=1000, description="Page size, 1 to 1,000.")]


@router.get(
    PATH,
    summary="Compare a traceset with a baseline",
    description="The medians over ranks of each side and their difference, the three "
    "kernels or operators whose time changed most, each rank's temporal breakdown matched "
    "by rank number (omitted, and said so, when the rank counts differ; the first 256), "
    "and the union of both sides' top kernels summed over ranks, by absolute difference "
    "(the first 100). " + TERMS,
    response_model=Comparison,
    responses=errors(400, 401, 403, 404, 409, 429),
)
async def compare_tracesets(
    service: Service, workspace: ReadWorkspace, traceset_id: TracesetId, baseline_id: str
) -> Response:
    answer = await run_in_threadpool(service.compare, workspace, traceset_id, baseline_id)
    return render.json_response(answer)


@router.get(
    PATH + "/ranks",
    summary="Page through a comparison's ranks",
    description="By rank number; empty when the rank counts differ. " + TERMS,
    response_model=ComparedRanksPage,
    responses=errors(400, 401, 403, 404, 409, 429),
)
async def compare_ranks(
    service: Service,
    workspace: ReadWorkspace,
    traceset_id: TracesetId,
    baseline_id: str,
    limit: RowsLimit = 256,
    cursor: PageCursor = None,
) -> Response:
    compared = partial(service.compare_ranks, cursor=cursor, limit=limit)
    answer = await run_in_threadpool(compared, workspace, traceset_id, baseline_id)
    return render.json_response(answer)


@router.get(
    PATH + "/kernels",
    summary="Page through a comparison's kernels",
    description="Both sides' top kernels summed over ranks, by absolute difference in "
    "time, then name. " + TERMS,
    response_model=ComparedKernelsPage,
    responses=errors(400, 401, 403, 404, 409, 429),
)
async def compare_kernels(
    service: Service,
    workspace: ReadWorkspace,
    traceset_id: TracesetId,
    baseline_id: str,
    limit: RowsLimit = 100,
    cursor: PageCursor = None,
) -> Response:
    compared = partial(service.compare_kernels, cursor=cursor, limit=limit)
    answer = await run_in_threadpool(compared, workspace, traceset_id, baseline_id)
    return render.json_response(answer)


@router.get(
    PATH + "/operators",
    summary="Page through a comparison's operators and kernels",
    description="Each operator and kernel name of either side, as Holistic Trace "
    "Analysis's TraceDiff.compare_traces groups them: `step=all`, every profiled step of "
    "every rank; `step=first`, the first step of the first rank (HTA's defaults). By "
    "absolute totalUsDiff, then name. " + TERMS,
    response_model=ComparedOperatorsPage,
    responses=errors(400, 401, 403, 404, 409, 429),
)
async def compare_operators(
    service: Service,
    workspace: ReadWorkspace,
    traceset_id: TracesetId,
    baseline_id: str,
    step: Annotated[
        Literal["all", "first"], Query(description="all (the default) or first.")
    ] = "all",
    limit: RowsLimit = 100,
    cursor: PageCursor = None,
) -> Response:
    compared = partial(service.compare_operators, step=step, cursor=cursor, limit=limit)
    answer = await run_in_threadpool(compared, workspace, traceset_id, baseline_id)
    return render.json_response(answer)
