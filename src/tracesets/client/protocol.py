"""What both clients send and how they read the answers; no I/O here.

Request bodies are checked with the service's own rules (``uploadrequest``) before they
are sent, so a refusal names the same member, value and rule with nothing sent.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, TypeAlias, TypeVar
from urllib.parse import quote

import httpx

from tracesets import jsontext
from tracesets.client.answers import (
    TracesetAnswer,
    Unreadable,
    UploadStatusAnswer,
    UploadUrlAnswer,
    WhoamiAnswer,
)
from tracesets.client.errors import ClientError
from tracesets.problems import Problem, TracesetsError
from tracesets.uploadrequest import read_file_additions, read_upload_request
from tracesets.vocabulary import (
    DEFAULT_SORT,
    FILES_PAGE_MAX,
    LIST_PAGE_MAX,
    MAX_BODY_BYTES,
    MAX_FILES_PER_REQUEST,
    MAX_FILES_PER_TRACESET,
    ListFilter,
    ListFilters,
    Sort,
)

if TYPE_CHECKING:
    import pydantic

    from tracesets.wire import UploadFileSpec, Whoami

TRACESETS: Final = "/api/v1/tracesets"
WHOAMI: Final = "/api/v1/whoami"
USAGE: Final = "/api/v1/usage"
#: Seconds ``complete`` may take to answer, at least: it checks every file in the store,
#: and a traceset of 100,000 files takes the service seconds to minutes (bench/README).
COMPLETE_TIMEOUT: Final = 900.0
#: Files asked for a page of the files route (its largest page).
FILES_PAGE: Final = FILES_PAGE_MAX
#: The largest page of a comparison's ranks, kernels or operators.
COMPARE_PAGE_MAX: Final = 1000

Model = TypeVar("Model", bound="pydantic.BaseModel")
A = TypeVar("A")
FileEntry: TypeAlias = "UploadFileSpec | Mapping[str, Any]"
Metadata: TypeAlias = "Mapping[str, Any] | pydantic.BaseModel"


def plain(value: Any) -> Any:
    """A pydantic model as the JSON object it stands for (members it was given only).
    A program that made one has imported pydantic; the command line never does."""
    pydantic = sys.modules.get("pydantic")
    if pydantic is not None and isinstance(value, pydantic.BaseModel):
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
    baseline_id: str | None = None,
) -> dict[str, Any]:
    """The upload-url body; raises ClientError (nothing sent) if any rule refuses it."""
    body = build_upload_body(
        name=name,
        files=files,
        workload_metadata=workload_metadata,
        description=description,
        baseline_id=baseline_id,
    )
    check(body)
    return body


def build_upload_body(
    *,
    name: str,
    files: Sequence[FileEntry],
    workload_metadata: Metadata | None,
    description: str | None,
    baseline_id: str | None = None,
) -> dict[str, Any]:
    """The upload-url body, unchecked: for a body whose parts were checked already.
    ``baseline_id``: the traceset to compare it with once inspected (else the service
    chooses the latest promoted one of the same workload and rank count)."""
    body: dict[str, Any] = {"name": name}
    if description is not None:
        body["description"] = description
    body["files"] = [plain(entry) for entry in files]
    if workload_metadata is not None:
        body["workloadMetadata"] = plain(workload_metadata)
    if baseline_id is not None:
        body["baselineId"] = baseline_id
    return body


def check(body: dict[str, Any]) -> None:
    """The upload rules, for a whole upload: its files may be more than one request declares
    (``declaration_batches`` splits them), up to what one traceset holds."""
    try:
        read_upload_request(body, max_files=MAX_FILES_PER_TRACESET)
    except TracesetsError as refused:
        raise ClientError.refused_locally(refused) from None


#: Bytes of file entries one request carries at most: half the service's body limit leaves
#: room for the rest of an upload-url body (64 KiB of metadata, a description).
BATCH_BYTES: Final = MAX_BODY_BYTES // 2
#: Files one request declares: fewer than the service takes (10,000), so that the answer's
#: URLs fit in it whole (S3's are ~900 bytes with their headers; the answer stops at 4 MiB)
#: and the client need not fetch the rest from the upload status, a store look-up a file.
BATCH_FILES: Final = min(4_000, MAX_FILES_PER_REQUEST)


#: An upload's first request declares at most this many files, or this many bytes of them
#: (one file at least), and each later request up to ``BATCH_GROWTH`` times more: the
#: client hashes ahead in the background, declares each batch once it is hashed and starts
#: its PUTs, so sending starts after a few files are read, not all of them. Hashing runs
#: several times faster than sending, so each batch is hashed and declared before the
#: PUTs of the one before run out, and the requests stay few (three for 64 files).
FIRST_BATCH_FILES: Final = 8
FIRST_BATCH_BYTES: Final = 32 * 1024 * 1024
BATCH_GROWTH: Final = 4


def declaration_batches(
    files: Sequence[dict[str, Any]], *, first: int | None = None, first_bytes: int | None = None
) -> list[list[dict[str, Any]]]:
    """The file entries of an upload split into the requests that declare them: the first
    goes with upload-url, each other with add-files. Each holds at most ``BATCH_FILES``
    entries and ``BATCH_BYTES`` of their JSON (at least one). With ``first`` (entries) or
    ``first_bytes`` (of the files' sizes), the first batch holds no more than that, and
    each later one ``BATCH_GROWTH`` times as much as the one before."""
    batches: list[list[dict[str, Any]]] = []
    batch: list[dict[str, Any]] = []
    used = content = 0
    most = BATCH_FILES if first is None else min(first, BATCH_FILES)
    most_bytes = first_bytes
    for entry in files:
        size = len(jsontext.dumps(entry)) + 1
        full = len(batch) == most or used + size > BATCH_BYTES
        if batch and (full or (most_bytes is not None and content >= most_bytes)):
            batches.append(batch)
            batch, used, content = [], 0, 0
            most = min(most * BATCH_GROWTH, BATCH_FILES)
            most_bytes = None if most_bytes is None else most_bytes * BATCH_GROWTH
        batch.append(entry)
        used += size
        content += int(entry.get("size", 0))
    return [*batches, batch] if batch else batches


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
    filters: ListFilters, page_size: int, sort: Sort = DEFAULT_SORT
) -> dict[str, str | int | float]:
    """The list's query: the filters given (keywords of the vocabulary), a page size, and
    the sort unless it is the default (so that a service without sorts reads it too)."""
    params = {**ListFilter(**filters).query(), "limit": max(1, min(LIST_PAGE_MAX, page_size))}
    return params if sort == DEFAULT_SORT else {**params, "sort": sort}


def traceset_path(traceset_id: str, *rest: str) -> str:
    return "/".join([TRACESETS, quote(traceset_id, safe=""), *rest])


def compare_path(traceset_id: str, baseline_id: str, *rest: str) -> str:
    """A comparison's route, or one of its pages' (``ranks``, ``kernels``, ``operators``)."""
    return traceset_path(traceset_id, "compare", quote(baseline_id, safe=""), *rest)


def file_path(traceset_id: str, name: str) -> str:
    """The file's route. A ``.`` segment, which a name stored before the service refused
    them may hold, is sent encoded: written as is, URLs drop it, naming another file."""
    segments = ("%2E" if part == "." else quote(part, safe="") for part in name.split("/"))
    return traceset_path(traceset_id, "files", "/".join(segments))


def parse(model: type[Model], response: httpx.Response, what: str) -> Model:
    """The answer read with the service's own exact JSON reader, then typed.

    Stored metadata keeps every number as it was written: a 5,000-digit integer or
    ``0.1000000000000000000001`` comes back as a ``jsontext.JsonNumber`` of its text.
    """
    import pydantic

    try:
        return model.model_validate(jsontext.loads(response.content))
    except (pydantic.ValidationError, jsontext.JsonError) as exc:
        why = exc.errors()[0]["msg"] if isinstance(exc, pydantic.ValidationError) else str(exc)
        raise _not_understood(what, response, why) from None


def read(reader: Callable[[Mapping[str, Any]], A], response: httpx.Response, what: str) -> A:
    """The answer read with the service's own exact JSON reader, then by one of the
    client's own readers (``answers``): no pydantic on an upload's way."""
    try:
        body = jsontext.loads(response.content)
        if not isinstance(body, Mapping):
            raise Unreadable("not a JSON object")
        return reader(body)
    except (Unreadable, jsontext.JsonError) as exc:
        raise _not_understood(what, response, str(exc)) from None


def _not_understood(what: str, response: httpx.Response, why: str) -> ClientError:
    return ClientError(
        f"{what} answered {response.status_code} with a body the client does not understand: {why}",
        status=response.status_code,
    )


def require_scope(who: WhoamiAnswer | Whoami, scope: str) -> None:
    """ClientError, as the service words its 403, when the token lacks ``scope``."""
    if scope not in who.scopes:
        detail = f"This token does not have the {scope} scope"
        raise ClientError(
            detail,
            status=403,
            title="Forbidden",
            problems=[Problem("Authorization", None, detail)],
        )


def inspection_pending(traceset: TracesetAnswer) -> bool:
    return traceset.inspection_status == "pending"


def inspection_timeout(traceset_id: str, timeout: float) -> ClientError:
    return ClientError(
        f"The traces of {traceset_id} are still being inspected after {timeout:g} s; "
        "wait_for_inspection again, or read the traceset later"
    )


def files_params(cursor: str | None) -> dict[str, str | int]:
    return {"limit": FILES_PAGE} if cursor is None else {"limit": FILES_PAGE, "cursor": cursor}


def left_out(answer: UploadUrlAnswer, names: Sequence[str]) -> set[str]:
    """The files of ``names`` an upload-url or add-files answer has no entry for because it
    was cut (``uploadsNextCursor``); empty when it was not (a file with nothing left to
    send has no entry either)."""
    if answer.uploadsNextCursor is None:
        return set()
    return set(names) - {u.name for u in answer.uploads}


def joined(first: UploadStatusAnswer, then: UploadStatusAnswer) -> UploadStatusAnswer:
    """Two pages of upload status as one."""
    return first.joined(then)
