"""``AsyncClient``: ``Client``'s twin for asyncio, the same methods awaited.

Every request and every step is ``ClientCore``'s; this class only performs them.
Files are read and hashed on worker threads, so the event loop never waits on the disk.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Self, TypeVar

import httpx

from tracesets.client import protocol
from tracesets.client.core import ClientCore, UploadPlan
from tracesets.client.downloads import DownloadSummary
from tracesets.client.errors import ClientError
from tracesets.client.files import (
    Download,
    LocalFile,
    PathLike,
    Put,
    collect,
    hash_file,
    total_size,
)
from tracesets.client.models import (
    PromotedTraceset,
    Traceset,
    TracesetFile,
    TracesetSummary,
    UploadStatus,
    UploadTarget,
    UploadUrlResponse,
    Whoami,
)
from tracesets.client.progress import ProgressCallback, ProgressCounter
from tracesets.client.retry import RetryPolicy
from tracesets.client.state import UploadState
from tracesets.client.steps import (
    Attempts,
    Call,
    Disk,
    Each,
    Fetch,
    Flow,
    Hash,
    PutAll,
    Sending,
    Step,
)
from tracesets.uploadrequest import Role

T = TypeVar("T")


class AsyncClient(ClientCore):
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
        self._http = httpx.AsyncClient(transport=transport, **self._http_settings())

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

    # -- performing the core's steps -------------------------------------------------------

    async def _run(self, flow: Flow[T]) -> T:
        """``Client._run``, each step awaited."""
        answer: Any = None
        failure: Exception | None = None
        while True:
            try:
                step = flow.send(answer) if failure is None else flow.throw(failure)
            except StopIteration as done:
                return done.value  # type: ignore[no-any-return]
            try:
                answer, failure = await self._perform(step), None
            except Exception as exc:  # thrown into the flow, which decides
                answer, failure = None, exc

    async def _perform(self, step: Step) -> Any:
        if isinstance(step, Call):
            return await self._fetch(step)
        if isinstance(step, Hash):
            return await self._hash(step.files, step.progress)
        if isinstance(step, PutAll):
            return await self._put_all(step.puts, step.progress)
        if isinstance(step, Fetch):
            return await self._fetch_bytes(step)
        if isinstance(step, Disk):
            return await asyncio.to_thread(step.work)
        if isinstance(step, Each):
            return await self._each([self._run(flow) for flow in step.flows])
        await asyncio.sleep(step.seconds)
        return None

    async def _fetch(self, call: Call[T]) -> T:
        args = self._request_args(call)
        response = await self._send(lambda: self._http.build_request(**args), call.what)
        return self._answer(call, response)

    async def _send(
        self,
        build: Callable[[], httpx.Request],
        what: str,
        *,
        rewind: Callable[[], None] | None = None,
        stream: bool = False,
    ) -> httpx.Response:
        attempts = Attempts(self.retry, what, rewind)
        while True:
            outcome: httpx.Response | Exception
            try:
                outcome = await self._http.send(build(), stream=stream)
            except httpx.TransportError as exc:
                outcome = exc
            kept = attempts.after(outcome)
            if isinstance(kept, httpx.Response):
                return kept
            if isinstance(outcome, httpx.Response):
                await outcome.aclose()
            await asyncio.sleep(kept)

    # -- the API ---------------------------------------------------------------------------

    async def request_upload_urls(
        self,
        *,
        name: str,
        files: Sequence[protocol.FileEntry],
        workload_metadata: protocol.Metadata | None = None,
        description: str | None = None,
        idempotency_key: str | None = None,
    ) -> UploadUrlResponse:
        body = protocol.upload_url_body(
            name=name, files=files, workload_metadata=workload_metadata, description=description
        )
        return await self._fetch(self._upload_url_call(body, idempotency_key))

    async def add_files(
        self, traceset_id: str, files: Sequence[protocol.FileEntry]
    ) -> UploadUrlResponse:
        """Declare more files of a pending traceset; an upload entry for each still to send."""
        return await self._fetch(self._add_files_call(traceset_id, files))

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
    ) -> Traceset:
        """``Client.upload``'s twin, ``wait`` included."""
        upload = UploadPlan.checked(
            collect(paths, supporting),
            name=name,
            workload_metadata=workload_metadata,
            description=description,
        )
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
    ) -> Traceset:
        return await self._run(self._upload_flow(upload, progress, hash_progress, wait))

    async def whoami(self) -> Whoami:
        return await self._fetch(self._whoami_call())

    async def wait_for_inspection(
        self, traceset_id: str, *, timeout: float = 60.0, interval: float = 0.25
    ) -> Traceset:
        return await self._run(self._wait_flow(traceset_id, timeout, interval))

    async def upload_status(self, traceset_id: str) -> UploadStatus:
        return await self._run(self._upload_status_flow(traceset_id))

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
    ) -> Traceset:
        return await self._run(self._resume_flow(traceset_id, files, progress, hash_progress))

    async def complete(self, traceset_id: str) -> Traceset:
        return await self._run(self._complete_flow(traceset_id))

    async def get_traceset(self, traceset_id: str) -> Traceset:
        return await self._run(self._get_flow(traceset_id))

    async def iter_files(
        self, traceset_id: str, cursor: str | None = None
    ) -> AsyncIterator[TracesetFile]:
        while True:
            page = await self._fetch(self._files_page_call(traceset_id, cursor))
            for item in page.items:
                yield item
            if (cursor := page.nextCursor) is None:
                return

    async def list_tracesets(
        self,
        *,
        status: str | None = None,
        rank_count: int | None = None,
        workload_family: str | None = None,
        workload_name: str | None = None,
        global_batch_size: int | None = None,
        page_size: int = 100,
    ) -> AsyncIterator[TracesetSummary]:
        params = protocol.list_params(
            status=status,
            rank_count=rank_count,
            workload_family=workload_family,
            workload_name=workload_name,
            global_batch_size=global_batch_size,
            page_size=page_size,
        )
        while True:
            page = await self._fetch(self._list_page_call(params))
            for item in page.items:
                yield item
            if page.nextCursor is None:
                return
            params = {**params, "cursor": page.nextCursor}

    async def promote_traceset(
        self, traceset_id: str, workload_metadata: protocol.Metadata | None = None
    ) -> PromotedTraceset:
        return await self._run(self._promote_flow(traceset_id, workload_metadata))

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

    async def _fetch_bytes(self, fetch: Fetch) -> Path:
        response = await self._send(
            lambda: self._http.build_request("GET", fetch.url), fetch.what, stream=True
        )
        sink = Download(fetch.target, fetch.sha256)
        try:
            if response.status_code != 200:
                await response.aread()
                raise ClientError.from_response(response, fetch.what)
            counter = ProgressCounter(
                int(response.headers.get("content-length", 0)), fetch.progress
            )
            counter.start()
            async for chunk in response.aiter_bytes():
                await asyncio.to_thread(sink.write, chunk)
                counter.add(len(chunk))
            return await asyncio.to_thread(sink.finish)
        except BaseException:
            sink.discard()
            raise
        finally:
            await response.aclose()

    # -- many at once ----------------------------------------------------------------------

    async def _each(self, jobs: list[Awaitable[T]]) -> list[T | None]:
        """Every job, ``concurrency`` at a time, results in order. After a failure no new
        job starts but those running finish; the first error is raised."""
        limit = asyncio.Semaphore(self.concurrency)
        failed = False

        async def guarded(job: Awaitable[T]) -> T | None:
            nonlocal failed
            async with limit:
                if failed:
                    _forget(job)
                    return None
                try:
                    return await job
                except BaseException:
                    failed = True
                    raise

        outcomes = await asyncio.gather(*(guarded(j) for j in jobs), return_exceptions=True)
        for outcome in outcomes:
            if isinstance(outcome, BaseException):
                raise outcome
        return [o for o in outcomes if not isinstance(o, BaseException)]

    async def _hash(
        self, files: list[LocalFile], progress: ProgressCallback | None
    ) -> list[LocalFile]:
        counter = ProgressCounter(total_size([f for f in files if f.sha256 is None]), progress)
        counter.start()
        limit = asyncio.Semaphore(self.concurrency)

        async def one(file: LocalFile) -> LocalFile:
            if file.sha256 is not None:
                return file  # computed once: a resume does not hash again
            async with limit:
                return await asyncio.to_thread(hash_file, file, counter.add)

        return await _all_or_none([one(f) for f in files])

    async def _put_all(self, puts: list[Put], progress: ProgressCallback | None) -> None:
        counter = ProgressCounter(sum(p.length for p in puts), progress)
        counter.start()
        await self._each([self._put(put, counter) for put in puts])

    async def _put(self, put: Put, counter: ProgressCounter) -> None:
        sending = Sending(put, counter)

        async def body() -> AsyncIterator[bytes]:
            chunks = sending.chunks()
            while (chunk := await asyncio.to_thread(next, chunks, b"")) != b"":
                yield chunk

        response = await self._send(
            lambda: self._http.build_request(
                "PUT", put.url, content=body(), headers=sending.headers
            ),
            sending.what,
            rewind=sending.rewind,
        )
        sending.check(response)


def _forget(job: Awaitable[Any]) -> None:
    """A coroutine never to be awaited, closed so that Python does not warn of it."""
    close = getattr(job, "close", None)
    if close is not None:
        close()


async def _all_or_none(jobs: list[Awaitable[T]]) -> list[T]:
    """Every job's result in order; on the first failure the others are cancelled."""
    if not jobs:
        return []
    tasks = [asyncio.ensure_future(job) for job in jobs]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    for task in tasks:
        if not task.cancelled() and (error := task.exception()) is not None:
            raise error
    return [task.result() for task in tasks]
