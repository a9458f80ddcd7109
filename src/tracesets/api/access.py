"""GET /api/v1/whoami: what a token opens, so a client checks it without side effects."""

from __future__ import annotations

from fastapi import APIRouter

from tracesets.api.deps import Caller, Service
from tracesets.api.openapi import errors
from tracesets.service import tokens
from tracesets.wire import Whoami

router = APIRouter(prefix="/api/v1", tags=["access"])


@router.get(
    "/whoami",
    summary="The workspace and scopes of the token sent, and how its uploads go",
    description="Any token the service knows, whatever its scopes, may ask. A client calls it "
    "before work that needs a scope (hashing files before an upload, offering Promote), "
    "so that a token without it is refused at once; nothing is read or changed. "
    "`multipartThreshold` says which files the store takes in parts, so that a client "
    "hashes each part only for those.",
    response_model=Whoami,
    responses=errors(401, 429),
)
async def whoami(caller: Caller, service: Service) -> Whoami:
    scopes = [scope for scope in tokens.ALL_SCOPES if scope in caller.scopes]
    return Whoami.model_validate(
        {
            "workspace": caller.workspace,
            "scopes": scopes,
            "multipartThreshold": service.store.multipart_threshold,
        }
    )
