"""What both clients send and how they read the answers; no I/O here.

Request bodies are checked with the service's own rules (``uploadrequest``) before they
are sent, so a refusal names the same member, value and rule with nothing sent.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final, TypeVar
from urllib.parse import quote

import httpx
import pydantic

from tracesets import jsontext
from tracesets.client.errors import ClientError
from tracesets.problems import Problem, TracesetsError
from tracesets.uploadrequest import read_file_additions, read_upload_request
from tracesets.wire import Traceset, UploadFileSpec, UploadStatus, Whoami

TRACESETS: Final = "/api/v1/tracesets"
WHOAMI: Final = "/api/v1/whoami"
MAX_PAGE: Final = 500
#: Files asked for a page of the files route (its largest page).
FILES_PAGE: Final = 1_000

Model = TypeVar("Model", bound=pydantic.BaseModel)
TracesetT = TypeVar("TracesetT", bound=Traceset)
FileEntry = UploadFileSpec | Mapping[str, Any]
Metadata = Mapping[str, Any] | pydantic.BaseModel


def plain(value: Any) -> Any:
    """A pydantic model as the JSON object it stands for (members it was given only)."""
    if isinstance(value, pydantic.BaseModel):
        return value.model_dump(mode="json", exclude_unset=True)
    if isinstance(value, Mapping) and not isinstance(value, dict):
        return dict(value)
    return value


def upload_url_body(
    *,
    name: str,
    files: Sequence[FileEntry],
    workload_metadata: Metadata | None,
    description: str | None,
) -> dict[str, Any]:
    """The upload-url body; raises ClientError (nothing sent) if any rule refuses it."""
    body = build_upload_body(
        name=name, files=files, workload_metadata=workload_metadata, description=description
    )
    check(body)
    return body


def build_upload_body(
    *,
    name: str,
    files: Sequence[FileEntry],
    workload_metadata: Metadata | None,
    description: str | None,
) -> dict[str, Any]:
    """The upload-url body, unchecked: for a body whose parts were checked already."""
    body: dict[str, Any] = {"name": name}
    if description is not None:
        body["description"] = description
    body["files"] = [plain(entry) for entry in files]
    if workload_metadata is not None:
        body["workloadMetadata"] = plain(workload_metadata)
    return body


def check(body: dict[str, Any]) -> None:
    try:
        read_upload_request(body)
    except TracesetsError as refused:
        raise ClientError.refused_locally(refused) from None


def add_files_body(files: Sequence[FileEntry]) -> dict[str, Any]:
    """The add-files body; raises ClientError (nothing sent) if any rule refuses it."""
    body = {"files": [plain(entry) for entry in files]}
    try:
        read_file_additions(body)
    except TracesetsError as refused:
        raise ClientError.refused_locally(refused) from None
    return body


def promote_body(workload_metadata: Metadata | None) -> dict[str, Any]:
    if workload_metadata is None:
        return {}
    return {"workloadMetadata": plain(workload_metadata)}


def headers(body: Any) -> dict[str, str]:
    if body is None:
        return {"Accept": "application/json"}
    return {"Accept": "application/json", "Content-Type": "application/json"}


def encode(body: Any) -> bytes:
    """Compact JSON, numbers as given (a ``JsonNumber`` keeps all its digits)."""
    try:
        return jsontext.dumps(body)
    except (jsontext.JsonError, TypeError) as exc:
        raise ClientError(f"The request cannot be sent as JSON: {exc}", sent=False) from None


def list_params(
    *,
    status: str | None,
    rank_count: int | None,
    workload_family: str | None,
    workload_name: str | None,
    global_batch_size: int | None,
    page_size: int,
) -> dict[str, str | int]:
    given: dict[str, str | int | None] = {
        "status": status,
        "rank_count": rank_count,
        "workload_family": workload_family,
        "workload_name": workload_name,
        "global_batch_size": global_batch_size,
        "limit": max(1, min(MAX_PAGE, page_size)),
    }
    return {key: value for key, value in given.items() if value is not None}


def traceset_path(traceset_id: str, *rest: str) -> str:
    return "/".join([TRACESETS, quote(traceset_id, safe=""), *rest])


def file_path(traceset_id: str, name: str) -> str:
    return traceset_path(traceset_id, "files", quote(name, safe="/"))


def parse(model: type[Model], response: httpx.Response, what: str) -> Model:
    """The answer read with the service's own exact JSON reader, then typed.

    Stored metadata keeps every number as it was written: a 5,000-digit integer or
    ``0.1000000000000000000001`` comes back as a ``jsontext.JsonNumber`` of its text.
    """
    try:
        return model.model_validate(jsontext.loads(response.content))
    except (pydantic.ValidationError, jsontext.JsonError) as exc:
        why = exc.errors()[0]["msg"] if isinstance(exc, pydantic.ValidationError) else str(exc)
        raise ClientError(
            f"{what} answered {response.status_code} with a body the client does not "
            f"understand: {why}",
            status=response.status_code,
        ) from None


def require_scope(who: Whoami, scope: str) -> None:
    """ClientError, as the service words its 403, when the token lacks ``scope``."""
    if scope not in who.scopes:
        detail = f"This token does not have the {scope} scope"
        raise ClientError(
            detail,
            status=403,
            title="Forbidden",
            problems=[Problem("Authorization", None, detail)],
        )


def inspection_pending(traceset: Traceset) -> bool:
    return traceset.inspection is not None and traceset.inspection.status == "pending"


def inspection_timeout(traceset_id: str, timeout: float) -> ClientError:
    return ClientError(
        f"The traces of {traceset_id} are still being inspected after {timeout:g} s; "
        "wait_for_inspection again, or read the traceset later"
    )


def files_params(cursor: str | None) -> dict[str, str | int]:
    return {"limit": FILES_PAGE} if cursor is None else {"limit": FILES_PAGE, "cursor": cursor}


def joined(first: UploadStatus, then: UploadStatus) -> UploadStatus:
    """Two pages of upload status as one."""
    return then.model_copy(
        update={
            "received": [*first.received, *then.received],
            "uploads": [*first.uploads, *then.uploads],
        }
    )
