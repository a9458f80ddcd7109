"""``Client``: the Tracesets service from Python; uploads run their PUTs on a thread pool.

Every request and every step is ``ClientCore``'s; ``BlockingIO`` performs them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self, TypeVar, Unpack

import httpx

from tracesets.client import plainhttp, protocol
from tracesets.client.answers import (
    TracesetAnswer,
    as_file,
    as_promoted,
    as_traceset,
    as_upload_status,
    as_upload_urls,
)
from tracesets.client.blocking import BlockingIO
from tracesets.client.calls import USER_AGENT, Page, Step
from tracesets.client.core import UploadPlan
from tracesets.client.downloads import DownloadSummary
from tracesets.client.files import (
    LocalFile,
    PathLike,
    collect,
)
from tracesets.client.plainhttp import PlainHttp
from tracesets.client.progress import FilesCallback, ProgressCallback
from tracesets.client.protocol import COMPARE_PAGE_MAX
from tracesets.client.retry import RetryPolicy
from tracesets.client.state import UploadState
from tracesets.client.steps import Call
from tracesets.client.transport import SchemeTransport
from tracesets.uploadrequest import Role
from tracesets.vocabulary import DEFAULT_SORT, ListFilters, Sort

if TYPE_CHECKING:
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

__all__ = ["USER_AGENT", "Client"]

T = TypeVar("T")
P = TypeVar("P", bound=Page)


class Client(BlockingIO):
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
        super().__init__(
            url, token, timeout=timeout, concurrency=concurrency, retry=retry, state=state
        )
        settings = self._http_settings()
        self._http = httpx.Client(
            transport=transport or SchemeTransport(settings["limits"]), **settings
        )
        if transport is None and plainhttp.usable():
            self._plain = PlainHttp(timeout, {"User-Agent": USER_AGENT})

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
        if self._plain is not None:
            self._plain.close()

    # -- the API ---------------------------------------------------------------------------

    def request_upload_urls(
        self,
        *,
        name: str,
        files: Sequence[protocol.FileEntry],
        workload_metadata: protocol.Metadata | None = None,
        description: str | None = None,
        idempotency_key: str | None = None,
        baseline_id: str | None = None,
    ) -> UploadUrlResponse:
        """Check the request with the upload rules, then ask for one signed URL per file.

        One ``Idempotency-Key`` (a fresh UUID unless given) goes with every retry, so a
        retried request never creates a second traceset.
        """
        body = protocol.upload_url_body(
            name=name,
            files=files,
            workload_metadata=workload_metadata,
            description=description,
            baseline_id=baseline_id,
        )
        return as_upload_urls(self._fetch(self._upload_url_call(body, idempotency_key)))

    def add_files(self, traceset_id: str, files: Sequence[protocol.FileEntry]) -> UploadUrlResponse:
        """Declare more files of a pending traceset; an upload entry for each still to send.

        Declaring a file again exactly as before is harmless (a retry answers what is left
        of it), so this is safe to retry as a whole.
        """
        return as_upload_urls(self._fetch(self._add_files_call(traceset_id, files)))

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
        request and send what is left of each (the entries a cut answer left out fetched
        from the upload status); the traceset stays pending. The token is checked first
        (whoami: ``ClientError`` 403 without ``write``, before a file is read)."""
        self._run(self._add_local_flow(traceset_id, files, progress))

    def send_uploads(
        self,
        traceset_id: str,
        files: list[LocalFile],
        uploads: Sequence[UploadTarget],
        progress: ProgressCallback | None = None,
    ) -> None:
        """PUT the bytes of ``files`` as ``uploads`` say, ``concurrency`` at a time."""
        self._run(self._send_flow(traceset_id, files, uploads, progress))

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
        ignore_trace_ranks: bool = False,
        baseline_id: str | None = None,
    ) -> Traceset:
        """Upload files and folders as one traceset; return it, ready.

        The request is checked with the upload rules, and the token with the service,
        before anything is read or sent; each file's sha256 is computed once, then
        ``concurrency`` PUTs run at a time, each retried with backoff.
        ``progress(bytes_sent, bytes_total)`` follows the PUTs, ``hash_progress`` the first
        pass. With ``wait`` seconds, the traceset is returned once the service has inspected
        its traces (see ``wait_for_inspection``).

        The traces' own ranks are read first, as ``tracesets upload`` reads them: traces
        that contradict the declared rank count (a world size other than it, a rank not
        below it) raise ``ClientError`` before anything is sent, unless
        ``ignore_trace_ranks``; the rank count cannot change after upload.

        Once inspected, the traceset is compared with ``baseline_id`` (a traceset of the
        workspace), else with the latest promoted one of the same workload and rank count;
        a regression against it is one of its inspection's warnings.
        """
        upload = UploadPlan.checked(
            collect(paths, supporting),
            name=name,
            workload_metadata=workload_metadata,
            description=description,
            ignore_trace_ranks=ignore_trace_ranks,
            baseline_id=baseline_id,
        )
        return self.upload_plan(upload, progress=progress, hash_progress=hash_progress, wait=wait)

    def upload_plan(
        self,
        upload: UploadPlan,
        *,
        progress: ProgressCallback | None = None,
        hash_progress: ProgressCallback | None = None,
        wait: float = 0,
        files_progress: FilesCallback | None = None,
    ) -> Traceset:
        """``upload`` of files already collected and checked (``UploadPlan.checked``);
        ``files_progress(arrived, count, in_flight)`` follows the PUTs file by file."""
        return as_traceset(
            self.upload_plan_answer(
                upload,
                progress=progress,
                hash_progress=hash_progress,
                wait=wait,
                files_progress=files_progress,
            )
        )

    def upload_plan_answer(
        self,
        upload: UploadPlan,
        *,
        progress: ProgressCallback | None = None,
        hash_progress: ProgressCallback | None = None,
        wait: float = 0,
        files_progress: FilesCallback | None = None,
    ) -> TracesetAnswer:
        """``upload_plan``, the traceset as the service answered it, read without pydantic
        (``TracesetAnswer``: what the command line prints)."""
        return self._run(self._upload_flow(upload, progress, hash_progress, wait, files_progress))

    def whoami(self) -> Whoami:
        """The workspace and scopes of this client's token; reads and changes nothing."""
        return self._fetch(self._whoami_call())

    def usage(self) -> Usage:
        """The tracesets, files and bytes of this client's workspace, and its quota of bytes
        (``quotaBytes``, None when the service sets none); needs the ``read`` scope."""
        return self._fetch(self._usage_call())

    def wait_for_inspection(
        self, traceset_id: str, *, timeout: float = 60.0, interval: float = 0.25
    ) -> Traceset:
        """The traceset once the service has read its traces (``inspection.status`` is no
        longer pending), polling every ``interval`` seconds (growing to 2) for at most
        ``timeout`` seconds; ``ClientError`` if it is still pending then. A traceset with no
        inspection (no primary files, or not complete) is returned at once."""
        return as_traceset(self._run(self._wait_flow(traceset_id, timeout, interval)))

    def upload_status(self, traceset_id: str, cursor: str | None = None) -> UploadStatus:
        """What of a pending upload has arrived, and fresh URLs for the rest (every page, or
        every page from ``cursor`` on: a page's ``nextCursor``, an answer's
        ``uploadsNextCursor``)."""
        return as_upload_status(self._run(self._upload_status_flow(traceset_id, cursor)))

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
        files = collect(paths, supporting)
        return self.resume_files(traceset_id, files, progress=progress, hash_progress=hash_progress)

    def resume_files(
        self,
        traceset_id: str,
        files: list[LocalFile],
        *,
        progress: ProgressCallback | None = None,
        hash_progress: ProgressCallback | None = None,
        files_progress: FilesCallback | None = None,
    ) -> Traceset:
        """``resume_upload`` of files already collected."""
        return as_traceset(
            self.resume_files_answer(
                traceset_id,
                files,
                progress=progress,
                hash_progress=hash_progress,
                files_progress=files_progress,
            )
        )

    def resume_files_answer(
        self,
        traceset_id: str,
        files: list[LocalFile],
        *,
        progress: ProgressCallback | None = None,
        hash_progress: ProgressCallback | None = None,
        files_progress: FilesCallback | None = None,
    ) -> TracesetAnswer:
        """``resume_files``, the traceset read without pydantic (see ``upload_plan_answer``)."""
        return self._run(
            self._resume_flow(traceset_id, files, progress, hash_progress, files_progress)
        )

    def complete(self, traceset_id: str) -> Traceset:
        """Mark an upload complete once every file has arrived whole."""
        return as_traceset(self._run(self._complete_flow(traceset_id)))

    def get_traceset(self, traceset_id: str) -> Traceset:
        """The traceset with every one of its files, fetched page after page past the first."""
        return as_traceset(self.get_traceset_answer(traceset_id))

    def get_traceset_answer(self, traceset_id: str) -> TracesetAnswer:
        """``get_traceset``, the traceset read without pydantic (see ``upload_plan_answer``)."""
        return self._run(self._get_flow(traceset_id))

    def iter_files(self, traceset_id: str, cursor: str | None = None) -> Iterator[TracesetFile]:
        """A traceset's files in index order (from ``cursor`` on, if given), one page of up
        to 1,000 fetched at a time."""
        while True:
            page = self._fetch(self._files_page_call(traceset_id, cursor))
            yield from (as_file(item) for item in page.items)
            if (cursor := page.nextCursor) is None:
                return

    def list_tracesets(
        self,
        *,
        page_size: int = 100,
        sort: Sort = DEFAULT_SORT,
        **filters: Unpack[ListFilters],
    ) -> Iterator[TracesetSummary]:
        """Every traceset matching all the filters given (``vocabulary.FILTERS``: status,
        rank_count, workload_family, workload_name, global_batch_size, inspected_ok,
        ranks_consistent, and on the inspection's figures gpu_idle_pct_max,
        gpu_idle_pct_min, comm_overlap_pct_min, step_ms_max, has_stragglers), newest first
        or in ``sort``'s order (``vocabulary.SORTS``: ``"-gpu_idle_pct"``…), page after page.

        Items count their files (``fileCount``, ``fileBytes``, ``filesReceived``);
        ``get_traceset`` or ``iter_files`` lists them."""
        params = protocol.list_params(filters, page_size, sort)
        while True:
            page = self._fetch(self._list_page_call(params))
            yield from page.items
            if page.nextCursor is None:
                return
            params = {**params, "cursor": page.nextCursor}

    def compare(self, traceset_id: str, baseline_id: str) -> Comparison:
        """``traceset_id`` against ``baseline_id``, both inspected, from what their
        inspections stored: the headline (median step ratio, GPU idle and overlap
        differences, the three largest contributors), the first page of ranks (matched by
        rank number; none when the rank counts differ, ``perRankNote`` says so) and of
        kernels (by absolute difference in time). ``compare_ranks`` and
        ``compare_kernels`` page through all of them; ``ClientError`` 409 names a side not
        inspected, 404 one not found."""
        return self._fetch(self._compare_call(traceset_id, baseline_id))

    def compare_ranks(
        self, traceset_id: str, baseline_id: str, *, page_size: int = COMPARE_PAGE_MAX
    ) -> Iterator[ComparedRank]:
        """Every rank of ``compare``, in rank order, page after page."""
        return self._items(
            lambda c: self._compare_ranks_call(traceset_id, baseline_id, c, page_size)
        )

    def compare_kernels(
        self, traceset_id: str, baseline_id: str, *, page_size: int = COMPARE_PAGE_MAX
    ) -> Iterator[ComparedKernel]:
        """Every kernel of ``compare``, by absolute difference in time, page after page."""
        return self._items(
            lambda c: self._compare_kernels_call(traceset_id, baseline_id, c, page_size)
        )

    def compare_operators(
        self,
        traceset_id: str,
        baseline_id: str,
        step: Step = "all",
        *,
        page_size: int = COMPARE_PAGE_MAX,
    ) -> Iterator[ComparedOperator]:
        """Each operator and kernel name's count and time on both sides, as HTA's
        ``TraceDiff.compare_traces``, by absolute difference in time: over every profiled
        step of every rank (``step="all"``), or the first step of each side's first rank
        (``"first"``, HTA's defaults); page after page."""
        return self._items(
            lambda c: self._compare_operators_call(traceset_id, baseline_id, step, c, page_size)
        )

    def _items(self, page: Callable[[str | None], Call[P]]) -> Iterator[Any]:
        """The items of every page, each page fetched when the one before is used up."""
        cursor = None
        while True:
            answer = self._fetch(page(cursor))
            yield from answer.items
            if (cursor := answer.nextCursor) is None:
                return

    def promote_traceset(
        self, traceset_id: str, workload_metadata: protocol.Metadata | None = None
    ) -> PromotedTraceset:
        """Promote a ready traceset; new ``workload_metadata`` replaces the stored one."""
        return as_promoted(self._run(self._promote_flow(traceset_id, workload_metadata)))

    def delete_traceset(self, traceset_id: str) -> None:
        self._fetch(self._delete_call(traceset_id))

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
        return self._run(self._download_flow(traceset_id, name, dest, sha256, progress))

    def download_traceset(
        self,
        traceset: str | Traceset | TracesetAnswer,
        dest: PathLike = ".",
        *,
        names: Iterable[str] | None = None,
        progress: ProgressCallback | None = None,
    ) -> DownloadSummary:
        """Every file of a traceset (or those ``names``) into ``dest`` by relative path,
        ``traceset`` its id or the whole traceset (from ``get_traceset``), fetched
        ``concurrency`` at a time, each checked against its sha256.

        Files already there whole are skipped, so running it again resumes; anything else
        there is replaced. After a failure no new file starts, those in flight finish, and
        the first error is raised.
        """
        return self._run(self._download_all_flow(traceset, dest, names, progress))
