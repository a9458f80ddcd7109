"""``Client``: the Tracesets service from Python; uploads run their PUTs on a thread pool."""

from __future__ import annotations

import contextlib
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from pathlib import Path
from types import TracebackType
from typing import Any, Self, Unpack

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
from tracesets.uploadrequest import Role
from tracesets.version import __version__
from tracesets.vocabulary import ListFilters

USER_AGENT = f"tracesets-python/{__version__}"


class _Cancelled(Exception):
    """The upload was interrupted (Ctrl-C): stop sending."""


class Client:
    """A blocking client of one Tracesets service.

    ``url`` and ``token`` default to ``TRACESETS_URL`` and ``TRACESETS_TOKEN`` (or
    ``SCALA_API_TOKEN``). Every method returns typed results and raises ``ClientError``,
    which carries the service's problem details. ``transport`` is httpx's seam for tests.

        with Client() as client:
            traceset = client.upload("run-42/", name="GPT, 256 ranks",
                                     workload_metadata={"shape": {"rankCount": 256}})
    """

    def __init__(
        self,
        url: str | None = None,
        token: str | None = None,
        *,
        timeout: float = 60.0,
        concurrency: int = 8,
        retry: RetryPolicy | None = None,
        state: UploadState | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self.url = connection.base_url(url)
        self.concurrency = concurrency
        self.retry = retry or RetryPolicy()
        self.state = state or UploadState()
        self._token = connection.token(token)
        self._http = httpx.Client(
            base_url=self.url,
            transport=transport,
            timeout=httpx.Timeout(timeout, connect=min(timeout, 10.0)),
            limits=httpx.Limits(max_connections=concurrency + 2),
            headers={"User-Agent": USER_AGENT},
        )

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    # -- sending, with retries -------------------------------------------------------------

    def _send(
        self,
        build: Callable[[], httpx.Request],
        what: str,
        *,
        rewind: Callable[[], None] | None = None,
        stream: bool = False,
    ) -> httpx.Response:
        """Send until an answer that is not worth retrying, or the retries run out."""
        attempt = 0
        while True:
            outcome: httpx.Response | Exception
            try:
                outcome = self._http.send(build(), stream=stream)
            except httpx.TransportError as exc:
                outcome = exc
            last = attempt >= self.retry.retries or not self.retry.retryable(outcome)
            if isinstance(outcome, httpx.Response) and last:
                return outcome
            if rewind is not None:
                rewind()
            if isinstance(outcome, httpx.Response):
                outcome.close()
            elif last:
                raise ClientError.no_answer(what, outcome) from outcome
            time.sleep(self.retry.delay(attempt, outcome))
            attempt += 1

    def _call(
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
        response = self._send(
            lambda: self._http.build_request(
                method, path, content=content, params=params, headers=sent
            ),
            what,
        )
        if response.status_code != expect:
            raise ClientError.from_response(response, what)
        return response

    # -- the API ---------------------------------------------------------------------------

    def request_upload_urls(
        self,
        *,
        name: str,
        files: Sequence[protocol.FileEntry],
        workload_metadata: protocol.Metadata | None = None,
        description: str | None = None,
        idempotency_key: str | None = None,
    ) -> UploadUrlResponse:
        """Check the request with the upload rules, then ask for one signed URL per file.

        One ``Idempotency-Key`` (a fresh UUID unless given) goes with every retry, so a
        retried request never creates a second traceset.
        """
        body = protocol.upload_url_body(
            name=name, files=files, workload_metadata=workload_metadata, description=description
        )
        key = idempotency_key or str(uuid.uuid4())
        response = self._call(
            "POST",
            f"{protocol.TRACESETS}/upload-url",
            "upload-url",
            body=body,
            headers={"Idempotency-Key": key},
            expect=201,
        )
        return protocol.parse(UploadUrlResponse, response, "upload-url")

    def add_files(self, traceset_id: str, files: Sequence[protocol.FileEntry]) -> UploadUrlResponse:
        """Declare more files of a pending traceset; an upload entry for each still to send.

        Declaring a file again exactly as before is harmless (a retry answers what is left
        of it), so this is safe to retry as a whole.
        """
        response = self._call(
            "POST",
            protocol.traceset_path(traceset_id, "files"),
            "add files",
            body=protocol.add_files_body(files),
            expect=201,
        )
        return protocol.parse(UploadUrlResponse, response, "add files")

    def send_file(
        self,
        traceset_id: str,
        path: PathLike,
        *,
        name: str,
        role: Role = "primary",
        progress: ProgressCallback | None = None,
    ) -> None:
        """Add one local file to a pending traceset as ``name`` and send its bytes; the
        traceset stays pending (others may still be adding theirs)."""
        local = Path(path)
        self.add_local_files(
            traceset_id, [LocalFile(local, name, local.stat().st_size, role)], progress
        )

    def add_local_files(
        self,
        traceset_id: str,
        files: list[LocalFile],
        progress: ProgressCallback | None = None,
    ) -> None:
        """Hash ``files`` (as ``collect`` finds them), add them to a pending traceset in one
        request and send what is left of each; the traceset stays pending."""
        files = self._hash(files, None)
        created = self.add_files(traceset_id, [f.spec() for f in files])
        uploads = self._every_upload(traceset_id, created, [f.name for f in files])
        self.send_uploads(traceset_id, files, uploads, progress)

    def send_uploads(
        self,
        traceset_id: str,
        files: list[LocalFile],
        uploads: Sequence[UploadTarget],
        progress: ProgressCallback | None = None,
    ) -> None:
        """PUT the bytes of ``files`` as ``uploads`` say, ``concurrency`` at a time."""
        try:
            puts = plan(files, uploads)
            self._put_all(puts, ProgressCounter(sum(p.length for p in puts), progress))
        except ClientError as error:
            error.traceset_id = traceset_id
            raise

    def upload(
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
        """Upload files and folders as one traceset; return it, ready.

        The request is checked with the upload rules, and the token with the service,
        before anything is read or sent; each file's sha256 is computed once, then
        ``concurrency`` PUTs run at a time, each retried with backoff.
        ``progress(bytes_sent, bytes_total)`` follows the PUTs, ``hash_progress`` the first
        pass. With ``wait`` seconds, the traceset is returned once the service has inspected
        its traces (see ``wait_for_inspection``).
        """
        files = collect(paths, supporting)
        protocol.upload_url_body(
            name=name,
            files=[f.spec() for f in files],
            workload_metadata=workload_metadata,
            description=description,
        )
        self._check_write_access()
        files = self._hash(files, hash_progress)
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
                done = self._resume(started, files, progress, hash_progress=None, declare=rest)
                self.state.forget(key)
                return self.wait_for_inspection(done.id, timeout=wait) if wait > 0 else done
        created = self.request_upload_urls(
            name=name, files=first, workload_metadata=workload_metadata, description=description
        )
        self.state.remember(key, created.tracesetId)
        uploads = [
            *self._every_upload(created.tracesetId, created, [f["name"] for f in first]),
            *self._declare(created.tracesetId, rest),
        ]
        done = self._send_files(created.tracesetId, files, uploads, progress)
        self.state.forget(key)
        return self.wait_for_inspection(done.id, timeout=wait) if wait > 0 else done

    def _declare(self, traceset_id: str, batches: list[list[dict[str, Any]]]) -> list[UploadTarget]:
        """Declare the files past the first request's, a batch a request (add-files); the
        upload entries answered. Declaring them again is harmless, so a resume repeats it."""
        uploads: list[UploadTarget] = []
        for batch in batches:
            answer = self.add_files(traceset_id, batch)
            uploads += self._every_upload(traceset_id, answer, [f["name"] for f in batch])
        return uploads

    def _every_upload(
        self, traceset_id: str, answer: UploadUrlResponse, names: list[str]
    ) -> list[UploadTarget]:
        """An answer's upload entries for ``names``, and those it left out to stay bounded,
        from the upload status (other files there, such as other ranks', are not ours)."""
        missing = protocol.left_out(answer, names)
        if not missing:
            return list(answer.uploads)
        status = self.upload_status(traceset_id, answer.uploadsNextCursor)
        return [*answer.uploads, *(u for u in status.uploads if u.name in missing)]

    def whoami(self) -> Whoami:
        """The workspace and scopes of this client's token; reads and changes nothing."""
        return protocol.parse(Whoami, self._call("GET", protocol.WHOAMI, "whoami"), "whoami")

    def _check_write_access(self) -> None:
        """Fail at once on a token that cannot upload, not after hashing terabytes."""
        protocol.require_scope(self.whoami(), "write")

    def wait_for_inspection(
        self, traceset_id: str, *, timeout: float = 60.0, interval: float = 0.25
    ) -> Traceset:
        """The traceset once the service has read its traces (``inspection.status`` is no
        longer pending), polling every ``interval`` seconds (growing to 2) for at most
        ``timeout`` seconds; ``ClientError`` if it is still pending then. A traceset with no
        inspection (no primary files, or not complete) is returned at once."""
        deadline = time.monotonic() + timeout
        while True:
            traceset = self.get_traceset(traceset_id)
            if not protocol.inspection_pending(traceset):
                return traceset
            left = deadline - time.monotonic()
            if left <= 0:
                raise protocol.inspection_timeout(traceset_id, timeout)
            time.sleep(min(interval, left))
            interval = min(interval * 1.5, 2.0)

    def upload_status(self, traceset_id: str, cursor: str | None = None) -> UploadStatus:
        """What of a pending upload has arrived, and fresh URLs for the rest (every page, or
        every page from ``cursor`` on: a page's ``nextCursor``, an answer's
        ``uploadsNextCursor``)."""
        whole: UploadStatus | None = None
        while True:
            response = self._call(
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

    def resume_upload(
        self,
        traceset_id: str,
        paths: PathLike | Iterable[PathLike],
        *,
        supporting: PathLike | Iterable[PathLike] = (),
        progress: ProgressCallback | None = None,
        hash_progress: ProgressCallback | None = None,
    ) -> Traceset:
        """Finish an interrupted upload: send only what has not arrived, then complete.

        ``paths`` and ``supporting`` as given to ``upload``; each file still to send must
        have the size and sha256 the traceset declared.
        """
        return self._resume(
            traceset_id, collect(paths, supporting), progress, hash_progress=hash_progress
        )

    def _resume(
        self,
        traceset_id: str,
        files: list[LocalFile],
        progress: ProgressCallback | None,
        *,
        hash_progress: ProgressCallback | None,
        declare: list[list[dict[str, Any]]] | None = None,
    ) -> Traceset:
        status = self.upload_status(traceset_id)
        if status.status != "pending":
            return self.get_traceset(traceset_id)
        if declare:  # batches an interrupted upload may not have declared yet
            self._declare(traceset_id, declare)
            status = self.upload_status(traceset_id)
        traceset = self.get_traceset(traceset_id)
        wanted = self._hash(still_to_send(files, traceset, status), hash_progress)
        check_digests(wanted, traceset)
        return self._send_files(traceset_id, wanted, status.uploads, progress)

    def _send_files(
        self,
        traceset_id: str,
        files: list[LocalFile],
        uploads: list[UploadTarget],
        progress: ProgressCallback | None,
    ) -> Traceset:
        try:
            puts = plan(files, uploads)
            self._put_all(puts, ProgressCounter(sum(p.length for p in puts), progress))
            return self.complete(traceset_id)
        except ClientError as error:
            error.traceset_id = traceset_id
            raise

    def complete(self, traceset_id: str) -> Traceset:
        """Mark an upload complete once every file has arrived whole."""
        response = self._call("POST", protocol.traceset_path(traceset_id, "complete"), "complete")
        return self._whole(protocol.parse(Traceset, response, "complete"))

    def get_traceset(self, traceset_id: str) -> Traceset:
        """The traceset with every one of its files, fetched page after page past the first."""
        response = self._call("GET", protocol.traceset_path(traceset_id), "get traceset")
        return self._whole(protocol.parse(Traceset, response, "get traceset"))

    def _whole(self, traceset: TracesetT) -> TracesetT:
        """The traceset with the files past its first page too (an answer holds one page)."""
        if traceset.filesNextCursor is None:
            return traceset
        rest = list(self.iter_files(traceset.id, traceset.filesNextCursor))
        return traceset.model_copy(
            update={"files": [*traceset.files, *rest], "filesNextCursor": None}
        )

    def iter_files(self, traceset_id: str, cursor: str | None = None) -> Iterator[TracesetFile]:
        """A traceset's files in index order (from ``cursor`` on, if given), one page of up
        to 1,000 fetched at a time."""
        while True:
            response = self._call(
                "GET",
                protocol.traceset_path(traceset_id, "files"),
                "list files",
                params=protocol.files_params(cursor),
            )
            page = protocol.parse(FileList, response, "list files")
            yield from page.items
            if page.nextCursor is None:
                return
            cursor = page.nextCursor

    def list_tracesets(
        self, *, page_size: int = 100, **filters: Unpack[ListFilters]
    ) -> Iterator[TracesetSummary]:
        """Every traceset matching all the filters given (``vocabulary.FILTERS``: status,
        rank_count, workload_family, workload_name, global_batch_size, inspected_ok,
        ranks_consistent), newest first, page after page.

        Items count their files (``fileCount``, ``fileBytes``, ``filesReceived``);
        ``get_traceset`` or ``iter_files`` lists them."""
        params = protocol.list_params(filters, page_size)
        while True:
            response = self._call("GET", protocol.TRACESETS, "list tracesets", params=params)
            page = protocol.parse(TracesetList, response, "list tracesets")
            yield from page.items
            if page.nextCursor is None:
                return
            params = {**params, "cursor": page.nextCursor}

    def promote_traceset(
        self, traceset_id: str, workload_metadata: protocol.Metadata | None = None
    ) -> PromotedTraceset:
        """Promote a ready traceset; new ``workload_metadata`` replaces the stored one."""
        response = self._call(
            "POST",
            protocol.traceset_path(traceset_id, "promote"),
            "promote",
            body=protocol.promote_body(workload_metadata),
        )
        return self._whole(protocol.parse(PromotedTraceset, response, "promote"))

    def download(
        self,
        traceset_id: str,
        name: str,
        dest: PathLike = ".",
        *,
        sha256: str | None = None,
        progress: ProgressCallback | None = None,
    ) -> Path:
        """Stream a file to ``dest`` (a folder, or the file's path); return where it went.

        With ``sha256``, the bytes must have that digest or nothing is kept.
        """
        what = f"download {name}"
        found = self._call("GET", protocol.file_path(traceset_id, name), what, expect=307)
        location = found.url.join(found.headers["location"])
        target = download_target(dest, name)
        for attempt in range(self.retry.retries + 1):
            response = self._send(
                lambda: self._http.build_request("GET", location), what, stream=True
            )
            sink = Download(target, sha256)
            try:
                if response.status_code != 200:
                    response.read()
                    raise ClientError.from_response(response, what)
                counter = ProgressCounter(int(response.headers.get("content-length", 0)), progress)
                counter.start()
                for chunk in response.iter_bytes():
                    sink.write(chunk)
                    counter.add(len(chunk))
                return sink.finish()
            except httpx.TransportError as exc:
                sink.discard()
                if attempt == self.retry.retries:
                    raise ClientError.no_answer(what, exc) from exc
                time.sleep(self.retry.delay(attempt, exc))
            except BaseException:
                sink.discard()
                raise
            finally:
                response.close()
        raise AssertionError("unreachable")

    def download_traceset(
        self,
        traceset: str | Traceset,
        dest: PathLike = ".",
        *,
        names: Iterable[str] | None = None,
        progress: ProgressCallback | None = None,
    ) -> DownloadSummary:
        """Every file of a traceset (or those ``names``) into ``dest`` by relative path,
        ``traceset`` its id or the whole ``Traceset`` (from ``get_traceset``), fetched
        ``concurrency`` at a time, each checked against its sha256.

        Files already there whole are skipped, so running it again resumes; anything else
        there is replaced. After a failure no new file starts, those in flight finish, and
        the first error is raised.
        """
        started = time.monotonic()
        if isinstance(traceset, str):
            traceset = self.get_traceset(traceset)
        traceset_id = traceset.id
        files = choose(traceset.files, names)
        places = [inside(dest, f.name) for f in files]
        counter = ProgressCounter(sum(f.size for f in files), progress)
        counter.start()
        stop = threading.Event()

        def one(file: TracesetFile, path: Path) -> int | None:
            if stop.is_set():
                return None
            try:
                if clear(path, file):
                    counter.add(file.size)
                    return None
                self.download(
                    traceset_id, file.name, path, sha256=file.sha256, progress=adding(counter)
                )
                return file.size
            except BaseException:
                stop.set()
                raise

        with ThreadPoolExecutor(self.concurrency) as pool:
            futures = [pool.submit(one, f, p) for f, p in zip(files, places, strict=True)]
            try:
                wait(futures)
            except BaseException:
                stop.set()
                raise
        for future in futures:
            if (error := future.exception()) is not None:
                raise error
        return tally((f.result() for f in futures), time.monotonic() - started, dest)

    def delete_traceset(self, traceset_id: str) -> None:
        self._call("DELETE", protocol.traceset_path(traceset_id), "delete", expect=204)

    # -- upload steps ----------------------------------------------------------------------

    def _hash(self, files: list[LocalFile], progress: ProgressCallback | None) -> list[LocalFile]:
        """Each file's sha256, computed once: files that have one keep it."""
        counter = ProgressCounter(total_size([f for f in files if f.sha256 is None]), progress)
        counter.start()
        with ThreadPoolExecutor(self.concurrency) as pool:
            return list(pool.map(lambda f: f if f.sha256 else hash_file(f, counter.add), files))

    def _put_all(self, puts: list[Put], counter: ProgressCounter) -> None:
        """Every PUT, ``concurrency`` at a time. After a failure no new PUT starts, but those
        in flight finish, so a resume has less to send; Ctrl-C stops them at their next chunk.
        """
        counter.start()
        stop, abort = threading.Event(), threading.Event()
        with ThreadPoolExecutor(self.concurrency) as pool:
            futures: list[Future[None]] = [
                pool.submit(self._put, put, counter, stop, abort) for put in puts
            ]
            try:
                wait(futures)
            except BaseException:
                stop.set()
                abort.set()
                raise
        for future in futures:
            if (error := future.exception()) is not None:
                raise error

    def _put(
        self, put: Put, counter: ProgressCounter, stop: threading.Event, abort: threading.Event
    ) -> None:
        if stop.is_set():
            return
        try:
            self._put_once(put, counter, abort)
        except BaseException:
            stop.set()
            raise

    def _put_once(self, put: Put, counter: ProgressCounter, abort: threading.Event) -> None:
        sent = 0

        def body() -> Iterator[bytes]:
            nonlocal sent
            for chunk in read_range(put.file.path, put.offset, put.length):
                if abort.is_set():
                    raise _Cancelled
                sent += len(chunk)
                counter.add(len(chunk))
                yield chunk

        def rewind() -> None:
            nonlocal sent
            counter.add(-sent)
            sent = 0

        # An explicit Content-Length: signed URLs (S3's above all) refuse chunked bodies.
        headers = {**put.headers, "Content-Length": str(put.length)}
        what = f"PUT {put.label}"
        try:
            response = self._send(
                lambda: self._http.build_request("PUT", put.url, content=body(), headers=headers),
                what,
                rewind=rewind,
            )
        except _Cancelled:
            return
        if not response.is_success and not already_stored(put, response.status_code):
            raise ClientError.from_response(response, what)
