"""Everything both clients do except I/O, as httpx's ``BaseClient`` does it.

``ClientCore`` holds the construction, one ``Call`` per API request (method, path,
body, expected status, how to read the answer), the upload plan and the resume
fingerprint. Steps of more than one request (an upload, a resume, paging, waiting for
an inspection) are written once, as generators that yield the steps they need done
(``steps.py``: a request, hashing, the PUTs, a pause, a download, local disk work).

``Client`` and ``AsyncClient`` only perform the steps (``_run``), blocking or awaited,
so a rule, a retry decision or a step of the upload cannot differ between them. A
failure is thrown back into the flow at the step that asked, so the flows handle errors
as plain code would.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Generator, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, cast

import httpx

from tracesets.client import connection, protocol
from tracesets.client.answers import (
    FileLike,
    FileListAnswer,
    TracesetAnswer,
    UploadStatusAnswer,
    UploadTargetLike,
    UploadUrlAnswer,
    WhoamiAnswer,
)
from tracesets.client.downloads import DownloadSummary, adding, choose, clear, inside, tally
from tracesets.client.errors import ClientError
from tracesets.client.files import (
    LocalFile,
    PathLike,
    check_digests,
    digest_shaped,
    download_target,
    plan,
    still_to_send,
    total_size,
    undigested,
)
from tracesets.client.progress import FilesCallback, ProgressCallback, ProgressCounter
from tracesets.client.retry import RetryPolicy
from tracesets.client.state import UploadState, fingerprint
from tracesets.client.steps import (
    Call,
    Disk,
    Each,
    Fetch,
    Flow,
    HashAhead,
    Params,
    Puts,
    PutsDone,
    Sleep,
    StartPuts,
    T,
    ask,
    hashed,
    hashed_next,
    light,
    location,
    nothing,
    reading,
)
from tracesets.version import __version__

if TYPE_CHECKING:
    from tracesets.client.models import Traceset, TracesetList, Whoami

USER_AGENT: Final = f"tracesets-python/{__version__}"
#: Seconds between polls of an inspection at first; each wait grows by half, to 2 s.
POLL_INTERVAL: Final = 0.25


@dataclass(frozen=True, slots=True)
class UploadPlan:
    """Files to upload as one traceset and what to declare of them, checked once."""

    files: list[LocalFile]
    name: str
    workload_metadata: protocol.Metadata | None = None
    description: str | None = None

    @classmethod
    def checked(
        cls,
        files: list[LocalFile],
        *,
        name: str,
        workload_metadata: protocol.Metadata | None = None,
        description: str | None = None,
    ) -> UploadPlan:
        """The plan, if the upload rules accept it; ClientError (nothing sent) if not.

        Checked before hashing: the digests the client adds later are well-formed by
        construction, so the rules need not see the body again.
        """
        made = cls(files, name, workload_metadata, description)
        protocol.check(made.body(files))
        return made

    def body(self, files: Sequence[LocalFile]) -> dict[str, Any]:
        return protocol.build_upload_body(
            name=self.name,
            files=[f.spec() for f in files],
            workload_metadata=self.workload_metadata,
            description=self.description,
        )


class ClientCore:
    """What ``Client`` and ``AsyncClient`` share: settings, requests, flows."""

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

    def _upload_flow(
        self,
        upload: UploadPlan,
        progress: ProgressCallback | None,
        hash_progress: ProgressCallback | None,
        wait: float,
        files_progress: FilesCallback | None = None,
    ) -> Flow[TracesetAnswer]:
        """The token checked (not after hashing terabytes), then a resume of the same
        upload if one is remembered, else a new traceset sent batch after batch.

        An upload is remembered under what is known of it before any file is read (names,
        sizes, roles, the rest of the body): a resume hashes every file and goes on only if
        each declared one is still the same, so changing any byte starts a new upload."""
        protocol.require_scope((yield from ask(self._scopes_call())), "write")
        key = fingerprint(self.url, self._token, upload.body([undigested(f) for f in upload.files]))
        files = upload.files
        started = self.state.started(key)
        done: TracesetAnswer | None = None
        if started is not None:
            files = yield from hashed(files, hash_progress)
            _, *rest = self._batches(files)
            try:  # the same upload ran before and did not finish: send only what is missing
                done = yield from self._resume_flow(
                    started, files, progress, None, files_progress, declare=rest, same=True
                )
            except ClientError:
                done = None  # gone, not resumable, or other bytes: start afresh
        if done is None:
            done = yield from self._batched_flow(
                upload, files, key, progress, hash_progress, files_progress
            )
        self.state.forget(key)
        if wait > 0:
            done = yield from self._wait_flow(done.id, wait, POLL_INTERVAL)
        return done

    @staticmethod
    def _batches(files: list[LocalFile]) -> list[list[LocalFile]]:
        """The requests declaring ``files``, small at first (``protocol.FIRST_BATCH_FILES``),
        split before they are hashed: the same whatever the digests turn out to be."""
        shaped = [digest_shaped(undigested(f)).spec() for f in files]
        sizes = protocol.declaration_batches(
            shaped, first=protocol.FIRST_BATCH_FILES, first_bytes=protocol.FIRST_BATCH_BYTES
        )
        batches, start = [], 0
        for batch in sizes:
            batches.append(files[start : start + len(batch)])
            start += len(batch)
        return batches

    def _batched_flow(
        self,
        upload: UploadPlan,
        files: list[LocalFile],
        key: str,
        progress: ProgressCallback | None,
        hash_progress: ProgressCallback | None,
        files_progress: FilesCallback | None,
    ) -> Flow[TracesetAnswer]:
        """A new traceset: the files hashed in the background, in order; each batch
        declared (upload-url, then add-files) once hashed and its PUTs started, sent while
        the next batches are hashed and declared; then complete. An error after upload-url
        names the traceset, left pending for a resume."""
        total = total_size(files)
        traceset_id: str | None = None
        yield HashAhead(files, hash_progress)
        try:
            for unread in self._batches(files):
                batch = yield from hashed_next(len(unread))
                entries = [f.spec() for f in batch]
                if traceset_id is None:
                    answer = yield from ask(self._upload_url_call(upload.body(batch), None))
                    traceset_id = answer.tracesetId
                    self.state.remember(key, traceset_id)
                    yield StartPuts(total, len(files), progress, files_progress)
                else:
                    answer = yield from ask(self._add_files_call(traceset_id, entries))
                uploads = yield from self._every_upload_flow(traceset_id, answer, entries)
                yield Puts(plan(batch, uploads), len(batch))
            if traceset_id is None:
                raise ClientError("Nothing to upload: no files", sent=False)
            yield PutsDone()
            return (yield from self._complete_flow(traceset_id))
        except ClientError as error:
            error.traceset_id = traceset_id
            raise

    def _resume_flow(
        self,
        traceset_id: str,
        files: list[LocalFile],
        progress: ProgressCallback | None,
        hash_progress: ProgressCallback | None,
        files_progress: FilesCallback | None = None,
        *,
        declare: Sequence[Sequence[LocalFile]] = (),
        same: bool = False,
    ) -> Flow[TracesetAnswer]:
        """What has not arrived sent, then the upload completed; ``declare``: the batches
        past the first that an interrupted upload may not have declared yet. ``same``:
        ``files`` are hashed, and each the traceset declared must have its digest."""
        status = yield from self._upload_status_flow(traceset_id)
        if status.status == "pending" and declare:
            yield from self._declare_flow(traceset_id, [[f.spec() for f in b] for b in declare])
            status = yield from self._upload_status_flow(traceset_id)
        traceset = yield from self._get_flow(traceset_id)
        if same:
            check_digests(files, traceset)
        if status.status != "pending":
            return traceset
        wanted = yield from hashed(still_to_send(files, traceset, status), hash_progress)
        check_digests(wanted, traceset)
        return (
            yield from self._send_and_complete_flow(
                traceset_id, wanted, status.uploads, progress, files_progress
            )
        )

    def _send_flow(
        self,
        traceset_id: str,
        files: list[LocalFile],
        uploads: Sequence[UploadTargetLike],
        progress: ProgressCallback | None,
        files_progress: FilesCallback | None = None,
    ) -> Flow[None]:
        """PUT what ``uploads`` ask for; an error names the traceset left pending."""
        try:
            puts = plan(files, uploads)
            yield StartPuts(sum(p.length for p in puts), len(puts), progress, files_progress)
            yield Puts(puts, len(puts))
            yield PutsDone()
        except ClientError as error:
            error.traceset_id = traceset_id
            raise

    def _send_and_complete_flow(
        self,
        traceset_id: str,
        files: list[LocalFile],
        uploads: Sequence[UploadTargetLike],
        progress: ProgressCallback | None,
        files_progress: FilesCallback | None = None,
    ) -> Flow[TracesetAnswer]:
        yield from self._send_flow(traceset_id, files, uploads, progress, files_progress)
        try:
            return (yield from self._complete_flow(traceset_id))
        except ClientError as error:
            error.traceset_id = traceset_id
            raise

    def _add_local_flow(
        self, traceset_id: str, files: list[LocalFile], progress: ProgressCallback | None
    ) -> Flow[None]:
        files = yield from hashed(files, None)
        specs = [f.spec() for f in files]
        created = yield from ask(self._add_files_call(traceset_id, specs))
        uploads = yield from self._every_upload_flow(traceset_id, created, specs)
        yield from self._send_flow(traceset_id, files, uploads, progress)

    def _declare_flow(
        self, traceset_id: str, batches: Sequence[Sequence[dict[str, Any]]]
    ) -> Flow[list[UploadTargetLike]]:
        """The files past the first request's declared, a batch a request (add-files); the
        upload entries answered. Declaring them again is harmless, so a resume repeats it."""
        uploads: list[UploadTargetLike] = []
        for batch in batches:
            answer = yield from ask(self._add_files_call(traceset_id, batch))
            uploads += yield from self._every_upload_flow(traceset_id, answer, batch)
        return uploads

    def _every_upload_flow(
        self,
        traceset_id: str,
        answer: UploadUrlAnswer,
        declared: Sequence[dict[str, Any]],
    ) -> Flow[list[UploadTargetLike]]:
        """An answer's upload entries for the files ``declared``, and those it left out to
        stay bounded, from the upload status (other files there, such as other ranks',
        are not ours)."""
        missing = protocol.left_out(answer, [f["name"] for f in declared])
        if not missing:
            return list(answer.uploads)
        status = yield from self._upload_status_flow(traceset_id, answer.uploadsNextCursor)
        return [*answer.uploads, *(u for u in status.uploads if u.name in missing)]

    def _download_flow(
        self,
        traceset_id: str,
        name: str,
        dest: PathLike,
        sha256: str | None,
        progress: ProgressCallback | None,
    ) -> Flow[Path]:
        """The redirect asked for once; the bytes fetched again if the connection breaks."""
        what = f"download {name}"
        url = yield from ask(self._file_call(traceset_id, name))
        target = download_target(dest, name)
        attempt = 0
        while True:
            try:
                return cast(Path, (yield Fetch(url, target, sha256, progress, what)))
            except httpx.TransportError as exc:
                if attempt == self.retry.retries:
                    raise ClientError.no_answer(what, exc) from exc
                yield Sleep(self.retry.delay(attempt, exc))
                attempt += 1

    def _download_all_flow(
        self,
        traceset: str | Traceset | TracesetAnswer,
        dest: PathLike,
        names: Iterable[str] | None,
        progress: ProgressCallback | None,
    ) -> Flow[DownloadSummary]:
        started = time.monotonic()
        if isinstance(traceset, str):
            traceset = yield from self._get_flow(traceset)
        files: list[FileLike] = choose(traceset.files, names)
        places = [(f, inside(dest, f.name)) for f in files]  # every name checked first
        counter = ProgressCounter(sum(f.size for f in files), progress)
        counter.start()
        flows = [self._download_one_flow(traceset.id, f, p, counter) for f, p in places]
        outcomes = yield Each(cast(list[Generator[Any, Any, Any]], flows))
        return tally(outcomes, time.monotonic() - started, dest)

    def _download_one_flow(
        self, traceset_id: str, file: FileLike, path: Path, counter: ProgressCounter
    ) -> Flow[int | None]:
        """The file's bytes fetched, or ``None`` when they are there already."""
        if (yield Disk(lambda: clear(path, file))):
            counter.add(file.size)
            return None
        yield from self._download_flow(traceset_id, file.name, path, file.sha256, adding(counter))
        return file.size
