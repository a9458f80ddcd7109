"""The probes, without a token: ``/livez`` (the process answers), ``/readyz`` (it can serve
requests now) and ``/healthz`` (kept as documented: the same answer as ``/livez``).

A liveness probe that touched the database would have every process restarted when the
database is down, which restarts nothing that was wrong; so ``/livez`` reads nothing and
``/readyz``, which a load balancer asks before sending requests, checks what requests
need (``service.readiness``).
"""

from __future__ import annotations

import asyncio
from typing import Any, Final

from fastapi import APIRouter
from fastapi.concurrency import run_in_threadpool

from tracesets.api.deps import Service
from tracesets.api.openapi import errors
from tracesets.problems import Problem, ServiceUnavailable
from tracesets.service import readiness
from tracesets.wire import Health, Readiness

router = APIRouter(tags=["service"])

#: Seconds ``/readyz`` waits for the database and the store: a probe that hangs as long
#: as a stuck connection says less than a 503 that names what did not answer in time.
READY_TIMEOUT: Final = 5.0
#: Seconds after which a probe may try again.
READY_RETRY_AFTER: Final = 5

_NOT_READY: Final[dict[int | str, dict[str, Any]]] = {
    503: {
        **errors(503)[503],
        "description": "Not ready: the database did not answer, is not at this version's "
        "newest migration, or the file store did not answer (`errors` names which); or the "
        "service serves all the requests it can at once. Retry after Retry-After seconds.",
    }
}


@router.get("/livez", summary="Liveness: the process answers", operation_id="livez")
async def livez() -> Health:
    return Health(status="ok")


@router.get("/healthz", summary="Liveness (as /livez)", operation_id="healthz")
async def healthz() -> Health:
    return Health(status="ok")


@router.get(
    "/readyz",
    summary="Readiness: the database and the file store answer, migrations at head",
    description="200 once this process can serve requests: the database answers a trivial "
    "query at this version's newest migration and the file store answers a cheap call. "
    "503 otherwise, with problem details naming each reason.",
    operation_id="readyz",
    responses=_NOT_READY,
)
async def readyz(service: Service) -> Readiness:
    try:
        found = await asyncio.wait_for(
            run_in_threadpool(readiness.problems, service.db, service.store), READY_TIMEOUT
        )
    except TimeoutError:
        found = [
            Problem(
                "",
                None,
                f"The database or the file store did not answer within {READY_TIMEOUT:g} s",
            )
        ]
    if found:
        refusal = ServiceUnavailable.of(found)
        refusal.retry_after = READY_RETRY_AFTER
        raise refusal
    return Readiness(status="ready")
