"""``AsyncClient``: ``Client``'s twin for asyncio, the same methods awaited.

Files are read and hashed on worker threads, so the event loop never waits on the disk.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Self, TypeVar, Unpack

import httpx

from tracesets.client import connection, protocol
from tracesets.client.downloads import DownloadSummary, adding, choose, clear, inside, tally
from tracesets.client.errors import ClientError
from tracesets.client.files import (
    Download,
    LocalFile,
    PathLike,
    Put,
    already_stored,
    check_digests,
    collect,
    download_target,
    hash_file,
    plan,
    read_range,
    still_to_send,
    total_size,
)
from tracesets.client.models import (
    FileList,
    PromotedTraceset,
    Traceset,
    TracesetFile,
    TracesetList,
    TracesetSummary,
    UploadStatus,
    UploadTarget,
    UploadUrlResponse,
    Whoami,
)
from tracesets.client.progress import ProgressCallback, ProgressCounter
from tracesets.client.protocol import TracesetT
from tracesets.client.retry import RetryPolicy
from tracesets.client.state import UploadState, fingerprint
from tracesets.client.sync import USER_AGENT
from tracesets.vocabulary import ListFilters

T = TypeVar("T")


class AsyncClient:
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
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self.url = connection.base_url(url)
        self.concurrency = concurrency
        self.retry = retry or RetryPolicy()
        self.state = state or UploadState()
        self._token = connection.token(token)
        self._http = httpx.AsyncClient(
            base_url=self.url,
            transport=transport,
            timeout=httpx.Timeout(timeout, connect=min(timeout, 10.0)),
            limits=httpx.Limits(max_connections=concurrency + 2),
            headers={"User-Agent": USER_AGENT},
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

    async def _send(
        self,
        build: Callable[[], httpx.Request],
        what: str,
        *,
        rewind: Callable[[], None] | None = None,
        stream: bool = False,
    ) -> httpx.Response:
        attempt = 0
        while True:
            outcome: httpx.Response | Exception
            try:
                outcome = await self._http.send(build(), stream=stream)
            except httpx.TransportError as exc:
                outcome = exc
            last = attempt >= self.retry.retries or not self.retry.retryable(outcome)
            if isinstance(outcome, httpx.Response) and last:
                return outcome
            if rewind is not None:
                rewind()
            if isinstance(outcome, httpx.Response):
                await outcome.aclose()
            elif last:
                raise ClientError.no_answer(what, outcome) from outcome
            await asyncio.sleep(self.retry.delay(attempt, outcome))
            attempt += 1

    async def _call(
        self,
        method: str,
        path: str,
        what: str,
        *,
        body: Any = None,
        params: dict[str, str | int] | None = None,
        headers: dict[str, str] | None = None,
        expect: int = 200,
    ) -> httpx.Response:
        sent = {**connection.auth_headers(self._token), **protocol.headers(body), **(headers or {})}
        content = None if body is None else protocol.encode(body)
        response = await self._send(
            lambda: self._http.build_request(
                method, path, content=content, params=params, headers=sent
            ),
            what,
        )
        if response.status_code != expect:
            raise ClientError.from_response(response, what)
        return response

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
        key = idempotency_key or str(uuid.uuid4())
        response = await self._call(
            "POST",
            f"{protocol.TRACESETS}/upload-url",
            "upload-url",
            body=body,
            headers={"Idempotency-Key": key},
            expect=201,
        )
        return protocol.parse(UploadUrlResponse, response, "upload-url")

    async def add_files(
        self, traceset_id: str, files: Sequence[protocol.FileEntry]
    ) -> UploadUrlResponse:
        """Declare more files of a pending traceset; an upload entry for each still to send."""
        response = await self._call(
            "POST",
            protocol.traceset_path(traceset_id, "files"),
            "add files",
            body=protocol.add_files_body(files),
            expect=201,
        )
        return protocol.parse(UploadUrlResponse, response, "add files")

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
        files = collect(paths, supporting)
        protocol.upload_url_body(
            name=name,
            files=[f.spec() for f in files],
            workload_metadata=workload_metadata,
            description=description,
        )
        await self._check_write_access()
        files = await self._hash(files, hash_progress)
        body = protocol.upload_url_body(
            name=name,
            files=[f.spec() for f in files],
            workload_metadata=workload_metadata,
            description=description,
        )
        key = fingerprint(self.url, self._token, body)
        first, *rest = protocol.declaration_batches(body["files"])
        started = self.state.started(key)
        if started is not None:
            # The same upload ran before and did not finish: send only what is missing.
            with contextlib.suppress(ClientError):
                done = await self._resume(
                    started, files, progress, hash_progress=None, declare=rest
                )
                self.state.forget(key)
                return await self.wait_for_inspection(done.id, timeout=wait) if wait > 0 else done
        created = await self.request_upload_urls(
            name=name, files=first, workload_metadata=workload_metadata, description=description
        )
        self.state.remember(key, created.tracesetId)
        uploads = [
            *await self._every_upload(created.tracesetId, created, [f["name"] for f in first]),
            *await self._declare(created.tracesetId, rest),
        ]
        done = await self._send_files(created.tracesetId, files, uploads, progress)
        self.state.forget(key)
        return await self.wait_for_inspection(done.id, timeout=wait) if wait > 0 else done

    async def _declare(
        self, traceset_id: str, batches: list[list[dict[str, Any]]]
    ) -> list[UploadTarget]:
        """``Client._declare``'s twin."""
        uploads: list[UploadTarget] = []
        for batch in batches:
            answer = await self.add_files(traceset_id, batch)
            uploads += await self._every_upload(traceset_id, answer, [f["name"] for f in batch])
        return uploads

    async def _every_upload(
        self, traceset_id: str, answer: UploadUrlResponse, names: list[str]
    ) -> list[UploadTarget]:
        """``Client._every_upload``'s twin."""
        missing = protocol.left_out(answer, names)
        if not missing:
            return list(answer.uploads)
        status = await self.upload_status(traceset_id, answer.uploadsNextCursor)
        return [*answer.uploads, *(u for u in status.uploads if u.name in missing)]

    async def whoami(self) -> Whoami:
        """``Client.whoami``'s twin."""
        response = await self._call("GET", protocol.WHOAMI, "whoami")
        return protocol.parse(Whoami, response, "whoami")

    async def _check_write_access(self) -> None:
        """``Client._check_write_access``'s twin: the token is checked before hashing."""
        protocol.require_scope(await self.whoami(), "write")

    async def wait_for_inspection(
        self, traceset_id: str, *, timeout: float = 60.0, interval: float = 0.25
    ) -> Traceset:
        """``Client.wait_for_inspection``'s twin."""
        deadline = time.monotonic() + timeout
        while True:
            traceset = await self.get_traceset(traceset_id)
            if not protocol.inspection_pending(traceset):
                return traceset
            left = deadline - time.monotonic()
            if left <= 0:
                raise protocol.inspection_timeout(traceset_id, timeout)
            await asyncio.sleep(min(interval, left))
            interval = min(interval * 1.5, 2.0)

    async def upload_status(self, traceset_id: str, cursor: str | None = None) -> UploadStatus:
        """What of a pending upload has arrived, and fresh URLs for the rest (every page, or
        every page from ``cursor`` on: a page's ``nextCursor``, an answer's
        ``uploadsNextCursor``)."""
        whole: UploadStatus | None = None
        while True:
            response = await self._call(
                "GET",
                protocol.traceset_path(traceset_id, "uploads"),
                "uploads",
                params=protocol.files_params(cursor),
            )
            page = protocol.parse(UploadStatus, response, "uploads")
            whole = page if whole is None else protocol.joined(whole, page)
            if page.nextCursor is None:
                return whole.model_copy(update={"nextCursor": None})
            cursor = page.nextCursor

    async def resume_upload(
        self,
        traceset_id: str,
        paths: PathLike | Iterable[PathLike],
        *,
        supporting: PathLike | Iterable[PathLike] = (),
        progress: ProgressCallback | None = None,
        hash_progress: ProgressCallback | None = None,
    ) -> Traceset:
        return await self._resume(
            traceset_id, collect(paths, supporting), progress, hash_progress=hash_progress
        )

    async def _resume(
        self,
        traceset_id: str,
        files: list[LocalFile],
        progress: ProgressCallback | None,
        *,
        hash_progress: ProgressCallback | None,
        declare: list[list[dict[str, Any]]] | None = None,
    ) -> Traceset:
        status = await self.upload_status(traceset_id)
        if status.status != "pending":
            return await self.get_traceset(traceset_id)
        if declare:  # batches an interrupted upload may not have declared yet
            await self._declare(traceset_id, declare)
            status = await self.upload_status(traceset_id)
        traceset = await self.get_traceset(traceset_id)
        wanted = await self._hash(still_to_send(files, traceset, status), hash_progress)
        check_digests(wanted, traceset)
        return await self._send_files(traceset_id, wanted, status.uploads, progress)

    async def _send_files(
        self,
        traceset_id: str,
        files: list[LocalFile],
        uploads: list[UploadTarget],
        progress: ProgressCallback | None,
    ) -> Traceset:
        try:
            puts = plan(files, uploads)
            counter = ProgressCounter(sum(p.length for p in puts), progress)
            counter.start()
            await self._put_all(puts, counter)
            return await self.complete(traceset_id)
        except ClientError as error:
            error.traceset_id = traceset_id
            raise

    async def complete(self, traceset_id: str) -> Traceset:
        response = await self._call(
            "POST", protocol.traceset_path(traceset_id, "complete"), "complete"
        )
        return await self._whole(protocol.parse(Traceset, response, "complete"))

    async def get_traceset(self, traceset_id: str) -> Traceset:
        """The traceset with every one of its files, fetched page after page past the first."""
        response = await self._call("GET", protocol.traceset_path(traceset_id), "get traceset")
        return await self._whole(protocol.parse(Traceset, response, "get traceset"))

    async def _whole(self, traceset: TracesetT) -> TracesetT:
        """The traceset with the files past its first page too (an answer holds one page)."""
        if traceset.filesNextCursor is None:
            return traceset
        rest = [f async for f in self.iter_files(traceset.id, traceset.filesNextCursor)]
        return traceset.model_copy(
            update={"files": [*traceset.files, *rest], "filesNextCursor": None}
        )

    async def iter_files(
        self, traceset_id: str, cursor: str | None = None
    ) -> AsyncIterator[TracesetFile]:
        """A traceset's files in index order (from ``cursor`` on, if given), one page of up
        to 1,000 fetched at a time."""
        while True:
            response = await self._call(
                "GET",
                protocol.traceset_path(traceset_id, "files"),
                "list files",
                params=protocol.files_params(cursor),
            )
            page = protocol.parse(FileList, response, "list files")
            for item in page.items:
                yield item
            if page.nextCursor is None:
                return
            cursor = page.nextCursor

    async def list_tracesets(
        self, *, page_size: int = 100, **filters: Unpack[ListFilters]
    ) -> AsyncIterator[TracesetSummary]:
        """Every traceset matching all the filters given, as ``Client.list_tracesets``."""
        params = protocol.list_params(filters, page_size)
        while True:
            response = await self._call("GET", protocol.TRACESETS, "list tracesets", params=params)
            page = protocol.parse(TracesetList, response, "list tracesets")
            for item in page.items:
                yield item
            if page.nextCursor is None:
                return
            params = {**params, "cursor": page.nextCursor}

    async def promote_traceset(
        self, traceset_id: str, workload_metadata: protocol.Metadata | None = None
    ) -> PromotedTraceset:
        response = await self._call(
            "POST",
            protocol.traceset_path(traceset_id, "promote"),
            "promote",
            body=protocol.promote_body(workload_metadata),
        )
        return await self._whole(protocol.parse(PromotedTraceset, response, "promote"))

    async def download(
        self,
        traceset_id: str,
        name: str,
        dest: PathLike = ".",
        *,
        sha256: str | None = None,
        progress: ProgressCallback | None = None,
    ) -> Path:
        what = f"download {name}"
        found = await self._call("GET", protocol.file_path(traceset_id, name), what, expect=307)
        location = found.url.join(found.headers["location"])
        target = download_target(dest, name)
        for attempt in range(self.retry.retries + 1):
            response = await self._send(
                lambda: self._http.build_request("GET", location), what, stream=True
            )
            sink = Download(target, sha256)
            try:
                if response.status_code != 200:
                    await response.aread()
                    raise ClientError.from_response(response, what)
                counter = ProgressCounter(int(response.headers.get("content-length", 0)), progress)
                counter.start()
                async for chunk in response.aiter_bytes():
                    await asyncio.to_thread(sink.write, chunk)
                    counter.add(len(chunk))
                return await asyncio.to_thread(sink.finish)
            except httpx.TransportError as exc:
                sink.discard()
                if attempt == self.retry.retries:
                    raise ClientError.no_answer(what, exc) from exc
                await asyncio.sleep(self.retry.delay(attempt, exc))
            except BaseException:
                sink.discard()
                raise
            finally:
                await response.aclose()
        raise AssertionError("unreachable")

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
        started = time.monotonic()
        if isinstance(traceset, str):
            traceset = await self.get_traceset(traceset)
        traceset_id = traceset.id
        files = choose(traceset.files, names)
        counter = ProgressCounter(sum(f.size for f in files), progress)
        counter.start()
        limit = asyncio.Semaphore(self.concurrency)
        failed = False

        async def one(file: TracesetFile) -> int | None:
            nonlocal failed
            async with limit:
                if failed:
                    return None
                try:
                    path = inside(dest, file.name)
                    if await asyncio.to_thread(clear, path, file):
                        counter.add(file.size)
                        return None
                    await self.download(
                        traceset_id, file.name, path, sha256=file.sha256, progress=adding(counter)
                    )
                    return file.size
                except BaseException:
                    failed = True
                    raise

        outcomes = await asyncio.gather(*(one(f) for f in files), return_exceptions=True)
        for outcome in outcomes:
            if isinstance(outcome, BaseException):
                raise outcome
        done = [o for o in outcomes if not isinstance(o, BaseException)]
        return tally(done, time.monotonic() - started, dest)

    async def delete_traceset(self, traceset_id: str) -> None:
        await self._call("DELETE", protocol.traceset_path(traceset_id), "delete", expect=204)

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

    async def _put_all(self, puts: list[Put], counter: ProgressCounter) -> None:
        """As ``Client``'s: after a failure no new PUT starts; those in flight finish."""
        limit = asyncio.Semaphore(self.concurrency)
        failed = False

        async def one(put: Put) -> None:
            nonlocal failed
            async with limit:
                if failed:
                    return
                try:
                    await self._put(put, counter)
                except BaseException:
                    failed = True
                    raise

        outcomes = await asyncio.gather(*(one(put) for put in puts), return_exceptions=True)
        for outcome in outcomes:
            if isinstance(outcome, BaseException):
                raise outcome

    async def _put(self, put: Put, counter: ProgressCounter) -> None:
        sent = 0

        async def body() -> AsyncIterator[bytes]:
            nonlocal sent
            chunks = read_range(put.file.path, put.offset, put.length)
            while (chunk := await asyncio.to_thread(next, chunks, b"")) != b"":
                sent += len(chunk)
                counter.add(len(chunk))
                yield chunk

        def rewind() -> None:
            nonlocal sent
            counter.add(-sent)
            sent = 0

        headers = {**put.headers, "Content-Length": str(put.length)}
        what = f"PUT {put.label}"
        response = await self._send(
            lambda: self._http.build_request("PUT", put.url, content=body(), headers=headers),
            what,
            rewind=rewind,
        )
        if not response.is_success and not already_stored(put, response.status_code):
            raise ClientError.from_response(response, what)


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
