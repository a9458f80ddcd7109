"""One ``Call`` per API request, and the flows that read one resource whole.

A ``Call`` says everything about a request but its I/O: method, path, body, the status
expected, how to read the answer, how long to wait for it. ``ClientCore`` (``core.py``)
builds the uploads and downloads on these; ``Client`` and ``AsyncClient`` perform them.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final, Literal, Protocol

import httpx

from tracesets.client import connection, protocol
from tracesets.client.answers import (
    FileListAnswer,
    TracesetAnswer,
    UploadStatusAnswer,
    UploadUrlAnswer,
    WhoamiAnswer,
)
from tracesets.client.errors import ClientError
from tracesets.client.retry import RetryPolicy
from tracesets.client.state import UploadState
from tracesets.client.steps import (
    Call,
    Flow,
    Params,
    Sleep,
    T,
    ask,
    light,
    location,
    nothing,
    reading,
)
from tracesets.version import __version__

if TYPE_CHECKING:
    from tracesets.client.models import (
        ComparedKernelsPage,
        ComparedOperatorsPage,
        ComparedRanksPage,
        Comparison,
        TracesetList,
        Usage,
        Whoami,
    )

USER_AGENT: Final = f"tracesets-python/{__version__}"

#: Which steps an operator comparison counts: every profiled step of every rank, or the
#: first step of each side's first rank (HTA's ``TraceDiff`` defaults).
Step = Literal["all", "first"]


class Page(Protocol):
    """A page of a paged route: its items, and the cursor of the next page (None: last)."""

    @property
    def items(self) -> Sequence[Any]: ...
    @property
    def nextCursor(self) -> str | None: ...  # noqa: N802 (the wire's name)


class Calls:
    """The settings, one ``Call`` per API request, and the flows that read one resource
    (a traceset with all its pages, its upload status, waiting for its inspection)."""

    def __init__(
        self,
        url: str | None,
        token: str | None,
        *,
        timeout: float,
        concurrency: int,
        retry: RetryPolicy | None,
        state: UploadState | None,
    ) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self.url = connection.base_url(url)
        self.concurrency = concurrency
        self.retry = retry or RetryPolicy()
        self.state = state or UploadState()
        self._token = connection.token(token)
        self._timeout = timeout

    def _http_settings(self) -> dict[str, Any]:
        """The keyword arguments of either httpx client."""
        return {
            "base_url": self.url,
            "timeout": httpx.Timeout(self._timeout, connect=min(self._timeout, 10.0)),
            # Every PUT at once keeps its connection between files, plus one for API calls.
            "limits": httpx.Limits(
                max_connections=self.concurrency + 2, max_keepalive_connections=self.concurrency + 2
            ),
            "headers": {"User-Agent": USER_AGENT},
        }

    def _request_args(self, call: Call[Any]) -> dict[str, Any]:
        """``build_request``'s arguments for ``call``, authorised."""
        headers = {
            **connection.auth_headers(self._token),
            **protocol.headers(call.body),
            **call.headers,
        }
        content = None if call.body is None else protocol.encode(call.body)
        args: dict[str, Any] = {
            "method": call.method,
            "url": call.path,
            "content": content,
            "params": call.params,
            "headers": headers,
        }
        if call.timeout is not None and call.timeout > self._timeout:
            args["timeout"] = httpx.Timeout(call.timeout, connect=min(self._timeout, 10.0))
        return args

    @staticmethod
    def _answer(call: Call[T], response: httpx.Response) -> T:
        if response.status_code != call.expect:
            raise ClientError.from_response(response, call.what)
        return call.read(response)

    # -- the API's requests -----------------------------------------------------------------

    def _whoami_call(self) -> Call[Whoami]:
        from tracesets.client.models import Whoami

        return Call("GET", protocol.WHOAMI, "whoami", reading(Whoami, "whoami"))

    def _usage_call(self) -> Call[Usage]:
        from tracesets.client.models import Usage

        return Call("GET", protocol.USAGE, "usage", reading(Usage, "usage"))

    def _scopes_call(self) -> Call[WhoamiAnswer]:
        """whoami, for an upload's check of its token's scopes."""
        return Call("GET", protocol.WHOAMI, "whoami", light(WhoamiAnswer.read, "whoami"))

    def _upload_url_call(self, body: dict[str, Any], key: str | None) -> Call[UploadUrlAnswer]:
        """One ``Idempotency-Key`` (a fresh UUID unless given) goes with every retry."""
        return Call(
            "POST",
            f"{protocol.TRACESETS}/upload-url",
            "upload-url",
            light(UploadUrlAnswer.read, "upload-url"),
            body=body,
            headers={"Idempotency-Key": key or str(uuid.uuid4())},
            expect=201,
        )

    def _add_files_call(
        self, traceset_id: str, files: Sequence[protocol.FileEntry]
    ) -> Call[UploadUrlAnswer]:
        return Call(
            "POST",
            protocol.traceset_path(traceset_id, "files"),
            "add files",
            light(UploadUrlAnswer.read, "add files"),
            body=protocol.add_files_body(files),
            expect=201,
        )

    def _uploads_page_call(self, traceset_id: str, cursor: str | None) -> Call[UploadStatusAnswer]:
        return Call(
            "GET",
            protocol.traceset_path(traceset_id, "uploads"),
            "uploads",
            light(UploadStatusAnswer.read, "uploads"),
            params=protocol.files_params(cursor),
        )

    def _files_page_call(self, traceset_id: str, cursor: str | None) -> Call[FileListAnswer]:
        return Call(
            "GET",
            protocol.traceset_path(traceset_id, "files"),
            "list files",
            light(FileListAnswer.read, "list files"),
            params=protocol.files_params(cursor),
        )

    def _list_page_call(self, params: Params) -> Call[TracesetList]:
        from tracesets.client.models import TracesetList

        return Call(
            "GET",
            protocol.TRACESETS,
            "list tracesets",
            reading(TracesetList, "list tracesets"),
            params=params,
        )

    def _compare_call(self, traceset_id: str, baseline_id: str) -> Call[Comparison]:
        from tracesets.client.models import Comparison

        path = protocol.compare_path(traceset_id, baseline_id)
        return Call("GET", path, "compare", reading(Comparison, "compare"))

    def _compare_ranks_call(
        self, traceset_id: str, baseline_id: str, cursor: str | None, size: int
    ) -> Call[ComparedRanksPage]:
        from tracesets.client.models import ComparedRanksPage

        path = protocol.compare_path(traceset_id, baseline_id, "ranks")
        what = "compare ranks"
        return Call("GET", path, what, reading(ComparedRanksPage, what), params=_page(cursor, size))

    def _compare_kernels_call(
        self, traceset_id: str, baseline_id: str, cursor: str | None, size: int
    ) -> Call[ComparedKernelsPage]:
        from tracesets.client.models import ComparedKernelsPage

        path = protocol.compare_path(traceset_id, baseline_id, "kernels")
        what = "compare kernels"
        return Call(
            "GET", path, what, reading(ComparedKernelsPage, what), params=_page(cursor, size)
        )

    def _compare_operators_call(
        self, traceset_id: str, baseline_id: str, step: Step, cursor: str | None, size: int
    ) -> Call[ComparedOperatorsPage]:
        from tracesets.client.models import ComparedOperatorsPage

        path = protocol.compare_path(traceset_id, baseline_id, "operators")
        what = "compare operators"
        params = {"step": step, **_page(cursor, size)}
        return Call("GET", path, what, reading(ComparedOperatorsPage, what), params=params)

    def _file_call(self, traceset_id: str, name: str) -> Call[httpx.URL]:
        """Where a file's bytes are: the service answers a redirect to a signed URL."""
        what = f"download {name}"
        return Call("GET", protocol.file_path(traceset_id, name), what, location, expect=307)

    def _delete_call(self, traceset_id: str) -> Call[None]:
        path = protocol.traceset_path(traceset_id)
        return Call("DELETE", path, "delete", nothing, expect=204)

    # -- steps of more than one request -------------------------------------------------------

    def _get_flow(self, traceset_id: str) -> Flow[TracesetAnswer]:
        path = protocol.traceset_path(traceset_id)
        read = light(TracesetAnswer.read, "get traceset")
        first = yield from ask(Call("GET", path, "get traceset", read))
        return (yield from self._whole(first))

    def _complete_flow(self, traceset_id: str) -> Flow[TracesetAnswer]:
        path = protocol.traceset_path(traceset_id, "complete")
        done = yield from ask(
            Call(
                "POST",
                path,
                "complete",
                light(TracesetAnswer.read, "complete"),
                timeout=protocol.COMPLETE_TIMEOUT,
            )
        )
        return (yield from self._whole(done))

    def _promote_flow(
        self, traceset_id: str, workload_metadata: protocol.Metadata | None
    ) -> Flow[TracesetAnswer]:
        """The promoted traceset (its ``warnings`` in its JSON), every file listed."""
        promoted = yield from ask(
            Call(
                "POST",
                protocol.traceset_path(traceset_id, "promote"),
                "promote",
                light(TracesetAnswer.read, "promote"),
                body=protocol.promote_body(workload_metadata),
            )
        )
        return (yield from self._whole(promoted))

    def _whole(self, traceset: TracesetAnswer) -> Flow[TracesetAnswer]:
        """The traceset with the files past its first page too (an answer holds one page)."""
        files, cursor = list(traceset.files), traceset.filesNextCursor
        if cursor is None:
            return traceset
        while cursor is not None:
            page = yield from ask(self._files_page_call(traceset.id, cursor))
            files.extend(page.items)
            cursor = page.nextCursor
        return traceset.with_files(files)

    def _upload_status_flow(
        self, traceset_id: str, cursor: str | None = None
    ) -> Flow[UploadStatusAnswer]:
        """Every page of the upload status, or every page from ``cursor`` on (a page's
        ``nextCursor``, an answer's ``uploadsNextCursor``), as one."""
        whole = yield from ask(self._uploads_page_call(traceset_id, cursor))
        cursor = whole.nextCursor
        while cursor is not None:
            page = yield from ask(self._uploads_page_call(traceset_id, cursor))
            whole, cursor = protocol.joined(whole, page), page.nextCursor
        return whole.whole()

    def _wait_flow(self, traceset_id: str, timeout: float, interval: float) -> Flow[TracesetAnswer]:
        deadline = time.monotonic() + timeout
        while True:
            traceset = yield from self._get_flow(traceset_id)
            if not protocol.inspection_pending(traceset):
                return traceset
            left = deadline - time.monotonic()
            if left <= 0:
                raise protocol.inspection_timeout(traceset_id, timeout)
            yield Sleep(min(interval, left))
            interval = min(interval * 1.5, 2.0)


def _page(cursor: str | None, size: int) -> Params:
    """A page's query: ``size`` rows (within the routes' bounds), from ``cursor`` on."""
    limit = max(1, min(protocol.COMPARE_PAGE_MAX, size))
    return {"limit": limit} if cursor is None else {"limit": limit, "cursor": cursor}
