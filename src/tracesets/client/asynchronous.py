"""``AsyncClient``: ``Client``'s twin for asyncio, the same methods awaited.

Every request and every step is ``ClientCore``'s; ``AwaitingIO`` performs them.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Self, TypeVar, Unpack

import httpx

from tracesets.client import protocol
from tracesets.client.answers import (
    as_file,
    as_promoted,
    as_traceset,
    as_upload_status,
    as_upload_urls,
)
from tracesets.client.awaiting import AwaitingIO
from tracesets.client.calls import Page, Step
from tracesets.client.core import UploadPlan
from tracesets.client.downloads import DownloadSummary
from tracesets.client.files import (
    LocalFile,
    PathLike,
    collect,
)
from tracesets.client.models import (
    ComparedKernel,
    ComparedOperator,
    ComparedRank,
    Comparison,
    PromotedTraceset,
    Traceset,
    TracesetFile,
    TracesetSummary,
    UploadStatus,
    UploadTarget,
    UploadUrlResponse,
    Usage,
    Whoami,
)
from tracesets.client.progress import FilesCallback, ProgressCallback
from tracesets.client.protocol import COMPARE_PAGE_MAX
from tracesets.client.retry import RetryPolicy
from tracesets.client.state import UploadState
from tracesets.client.steps import Call
from tracesets.client.transport import AsyncSchemeTransport
from tracesets.uploadrequest import Role
from tracesets.vocabulary import DEFAULT_SORT, ListFilters, Sort

T = TypeVar("T")
P = TypeVar("P", bound=Page)


class AsyncClient(AwaitingIO):
    """An asyncio client of one Tracesets service; see ``Client`` for every method."""

    def __init__(
        self,
        url: str | None = None,
        token: str | None = None,
        *,
        timeout: float = 60.0,
        concurrency: int = 8,
        retry: RetryPolicy | None = None,
        state: UploadState | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        super().__init__(
            url, token, timeout=timeout, concurrency=concurrency, retry=retry, state=state
        )
        settings = self._http_settings()
        self._http = httpx.AsyncClient(
            transport=transport or AsyncSchemeTransport(settings["limits"]), **settings
        )

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    # -- the API ---------------------------------------------------------------------------

    async def request_upload_urls(
        self,
        *,
        name: str,
        files: Sequence[protocol.FileEntry],
        workload_metadata: protocol.Metadata | None = None,
        description: str | None = None,
        idempotency_key: str | None = None,
        baseline_id: str | None = None,
    ) -> UploadUrlResponse:
        body = protocol.upload_url_body(
            name=name,
            files=files,
            workload_metadata=workload_metadata,
            description=description,
            baseline_id=baseline_id,
        )
        answer = await self._fetch(self._upload_url_call(body, idempotency_key))
        return as_upload_urls(answer)

    async def add_files(
        self, traceset_id: str, files: Sequence[protocol.FileEntry]
    ) -> UploadUrlResponse:
        """Declare more files of a pending traceset; an upload entry for each still to send."""
        answer = await self._fetch(self._add_files_call(traceset_id, files))
        return as_upload_urls(answer)

    async def send_file(
        self,
        traceset_id: str,
        path: PathLike,
        *,
        name: str,
        role: Role = "primary",
        progress: ProgressCallback | None = None,
    ) -> None:
        local = Path(path)
        await self.add_local_files(
            traceset_id, [LocalFile(local, name, local.stat().st_size, role)], progress
        )

    async def add_local_files(
        self,
        traceset_id: str,
        files: list[LocalFile],
        progress: ProgressCallback | None = None,
    ) -> None:
        await self._run(self._add_local_flow(traceset_id, files, progress))

    async def send_uploads(
        self,
        traceset_id: str,
        files: list[LocalFile],
        uploads: Sequence[UploadTarget],
        progress: ProgressCallback | None = None,
    ) -> None:
        await self._run(self._send_flow(traceset_id, files, uploads, progress))

    async def upload(
        self,
        paths: PathLike | Iterable[PathLike],
        *,
        name: str,
        workload_metadata: protocol.Metadata | None = None,
        description: str | None = None,
        supporting: PathLike | Iterable[PathLike] = (),
        progress: ProgressCallback | None = None,
        hash_progress: ProgressCallback | None = None,
        wait: float = 0,
        ignore_trace_ranks: bool = False,
        baseline_id: str | None = None,
    ) -> Traceset:
        """``Client.upload``'s twin, ``wait`` and ``ignore_trace_ranks`` included."""

        def planned() -> UploadPlan:  # the folders walked, the traces' ranks read: disk work
            return UploadPlan.checked(
                collect(paths, supporting),
                name=name,
                workload_metadata=workload_metadata,
                description=description,
                ignore_trace_ranks=ignore_trace_ranks,
                baseline_id=baseline_id,
            )

        upload = await asyncio.to_thread(planned)
        return await self.upload_plan(
            upload, progress=progress, hash_progress=hash_progress, wait=wait
        )

    async def upload_plan(
        self,
        upload: UploadPlan,
        *,
        progress: ProgressCallback | None = None,
        hash_progress: ProgressCallback | None = None,
        wait: float = 0,
        files_progress: FilesCallback | None = None,
    ) -> Traceset:
        return as_traceset(
            await self._run(
                self._upload_flow(upload, progress, hash_progress, wait, files_progress)
            )
        )

    async def whoami(self) -> Whoami:
        return await self._fetch(self._whoami_call())

    async def usage(self) -> Usage:
        """``Client.usage``: the workspace's tracesets, files, bytes and quota."""
        return await self._fetch(self._usage_call())

    async def wait_for_inspection(
        self, traceset_id: str, *, timeout: float = 60.0, interval: float = 0.25
    ) -> Traceset:
        return as_traceset(await self._run(self._wait_flow(traceset_id, timeout, interval)))

    async def upload_status(self, traceset_id: str, cursor: str | None = None) -> UploadStatus:
        return as_upload_status(await self._run(self._upload_status_flow(traceset_id, cursor)))

    async def resume_upload(
        self,
        traceset_id: str,
        paths: PathLike | Iterable[PathLike],
        *,
        supporting: PathLike | Iterable[PathLike] = (),
        progress: ProgressCallback | None = None,
        hash_progress: ProgressCallback | None = None,
    ) -> Traceset:
        files = collect(paths, supporting)
        return await self.resume_files(
            traceset_id, files, progress=progress, hash_progress=hash_progress
        )

    async def resume_files(
        self,
        traceset_id: str,
        files: list[LocalFile],
        *,
        progress: ProgressCallback | None = None,
        hash_progress: ProgressCallback | None = None,
        files_progress: FilesCallback | None = None,
    ) -> Traceset:
        return as_traceset(
            await self._run(
                self._resume_flow(traceset_id, files, progress, hash_progress, files_progress)
            )
        )

    async def complete(self, traceset_id: str) -> Traceset:
        return as_traceset(await self._run(self._complete_flow(traceset_id)))

    async def get_traceset(self, traceset_id: str) -> Traceset:
        return as_traceset(await self._run(self._get_flow(traceset_id)))

    async def iter_files(
        self, traceset_id: str, cursor: str | None = None
    ) -> AsyncIterator[TracesetFile]:
        while True:
            page = await self._fetch(self._files_page_call(traceset_id, cursor))
            for item in page.items:
                yield as_file(item)
            if (cursor := page.nextCursor) is None:
                return

    async def list_tracesets(
        self,
        *,
        page_size: int = 100,
        sort: Sort = DEFAULT_SORT,
        **filters: Unpack[ListFilters],
    ) -> AsyncIterator[TracesetSummary]:
        """Every traceset matching all the filters given, as ``Client.list_tracesets``."""
        params = protocol.list_params(filters, page_size, sort)
        while True:
            page = await self._fetch(self._list_page_call(params))
            for item in page.items:
                yield item
            if page.nextCursor is None:
                return
            params = {**params, "cursor": page.nextCursor}

    async def compare(self, traceset_id: str, baseline_id: str) -> Comparison:
        """``Client.compare``: the headline, the first page of ranks and of kernels."""
        return await self._fetch(self._compare_call(traceset_id, baseline_id))

    async def compare_ranks(
        self, traceset_id: str, baseline_id: str, *, page_size: int = COMPARE_PAGE_MAX
    ) -> AsyncIterator[ComparedRank]:
        async for item in self._items(
            lambda c: self._compare_ranks_call(traceset_id, baseline_id, c, page_size)
        ):
            yield item

    async def compare_kernels(
        self, traceset_id: str, baseline_id: str, *, page_size: int = COMPARE_PAGE_MAX
    ) -> AsyncIterator[ComparedKernel]:
        async for item in self._items(
            lambda c: self._compare_kernels_call(traceset_id, baseline_id, c, page_size)
        ):
            yield item

    async def compare_operators(
        self,
        traceset_id: str,
        baseline_id: str,
        step: Step = "all",
        *,
        page_size: int = COMPARE_PAGE_MAX,
    ) -> AsyncIterator[ComparedOperator]:
        """``Client.compare_operators``: ``step`` "all" or "first" (HTA's defaults)."""
        async for item in self._items(
            lambda c: self._compare_operators_call(traceset_id, baseline_id, step, c, page_size)
        ):
            yield item

    async def _items(self, page: Callable[[str | None], Call[P]]) -> AsyncIterator[Any]:
        cursor = None
        while True:
            answer = await self._fetch(page(cursor))
            for item in answer.items:
                yield item
            if (cursor := answer.nextCursor) is None:
                return

    async def promote_traceset(
        self, traceset_id: str, workload_metadata: protocol.Metadata | None = None
    ) -> PromotedTraceset:
        return as_promoted(await self._run(self._promote_flow(traceset_id, workload_metadata)))

    async def delete_traceset(self, traceset_id: str) -> None:
        await self._fetch(self._delete_call(traceset_id))

    async def download(
        self,
        traceset_id: str,
        name: str,
        dest: PathLike = ".",
        *,
        sha256: str | None = None,
        progress: ProgressCallback | None = None,
    ) -> Path:
        return await self._run(self._download_flow(traceset_id, name, dest, sha256, progress))

    async def download_traceset(
        self,
        traceset: str | Traceset,
        dest: PathLike = ".",
        *,
        names: Iterable[str] | None = None,
        progress: ProgressCallback | None = None,
    ) -> DownloadSummary:
        """As ``Client``'s: ``concurrency`` files at a time, each checked, whole ones skipped;
        after a failure no new file starts, and the first error is raised."""
        return await self._run(self._download_all_flow(traceset, dest, names, progress))
