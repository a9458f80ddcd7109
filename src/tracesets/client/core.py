"""Everything both clients do except I/O, as httpx's ``BaseClient`` does it.

``ClientCore`` holds the upload plan, the resume fingerprint and the flows of many
steps, on ``Calls`` (``calls.py``: the construction, one ``Call`` per API request with
its method, path, body, expected status and how to read the answer). Steps of more than one request (an upload, a resume, paging, waiting for
an inspection) are written once, as generators that yield the steps they need done
(``steps.py``: a request, hashing, the PUTs, a pause, a download, local disk work).

``Client`` and ``AsyncClient`` only perform the steps (``_run``), blocking or awaited,
so a rule, a retry decision or a step of the upload cannot differ between them. A
failure is thrown back into the flow at the step that asked, so the flows handle errors
as plain code would.
"""

from __future__ import annotations

import time
from collections.abc import Generator, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, cast

import httpx

from tracesets import workload
from tracesets.client import protocol, traceranks
from tracesets.client.answers import (
    FileLike,
    TracesetAnswer,
    UploadTargetLike,
    UploadUrlAnswer,
    WhoamiAnswer,
)
from tracesets.client.calls import Calls
from tracesets.client.downloads import DownloadSummary, adding, choose, clear, places, tally
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
from tracesets.client.state import fingerprint
from tracesets.client.steps import (
    Disk,
    Each,
    Fetch,
    Flow,
    HashAhead,
    Puts,
    PutsDone,
    Sleep,
    StartPuts,
    ask,
    hashed,
    hashed_next,
)

if TYPE_CHECKING:
    from tracesets.client.models import Traceset
    from tracesets.inspection import FileFinding

#: Seconds between polls of an inspection at first; each wait grows by half, to 2 s.
POLL_INTERVAL: Final = 0.25


@dataclass(frozen=True, slots=True)
class UploadPlan:
    """Files to upload as one traceset and what to declare of them, checked once;
    ``trace_warnings``: where the traces disagree with the declared rank count (ranks
    with no trace, duplicated ranks), one sentence each."""

    files: list[LocalFile]
    name: str
    workload_metadata: protocol.Metadata | None = None
    description: str | None = None
    trace_warnings: tuple[str, ...] = ()
    baseline_id: str | None = None

    @classmethod
    def checked(
        cls,
        files: list[LocalFile],
        *,
        name: str,
        workload_metadata: protocol.Metadata | None = None,
        description: str | None = None,
        ignore_trace_ranks: bool = False,
        findings: Sequence[FileFinding] | None = None,
        baseline_id: str | None = None,
    ) -> UploadPlan:
        """The plan, if the upload rules accept it and the traces do not contradict the
        declared rank count (``traceranks``; ``ignore_trace_ranks`` uploads them anyway);
        ClientError (nothing sent) if not. ``findings``: the traces' ranks, if read already.

        Checked before hashing: the digests the client adds later are well-formed by
        construction, so the rules need not see the body again.
        """
        made = cls(files, name, workload_metadata, description, baseline_id=baseline_id)
        protocol.check(made.body(files))
        declared = workload.check_rank_count(workload_metadata, has_primary_files=False)
        if declared.rank_count is None:
            return made
        said = traceranks.check(
            files, declared.rank_count, ignore=ignore_trace_ranks, findings=findings
        )
        return replace(made, trace_warnings=tuple(said))

    def body(self, files: Sequence[LocalFile]) -> dict[str, Any]:
        return protocol.build_upload_body(
            name=self.name,
            files=[f.spec() for f in files],
            workload_metadata=self.workload_metadata,
            description=self.description,
            baseline_id=self.baseline_id,
        )


class ClientCore(Calls):
    """What ``Client`` and ``AsyncClient`` share: the requests (``Calls``) and the flows of
    many steps, an upload's and a download's."""

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
        who = yield from self._writer_flow()
        key = fingerprint(self.url, self._token, upload.body([undigested(f) for f in upload.files]))
        files = upload.files
        started = self.state.started(key)
        done: TracesetAnswer | None = None
        if started is not None:
            files = yield from hashed(files, hash_progress, who.multipartThreshold)
            _, *rest = self._batches(files)
            try:  # the same upload ran before and did not finish: send only what is missing
                done = yield from self._resume_flow(
                    started, files, progress, None, files_progress, declare=rest, same=True
                )
            except ClientError:
                done = None  # gone, not resumable, or other bytes: start afresh
        if done is None:
            hashing = HashAhead(files, hash_progress, who.multipartThreshold)
            done = yield from self._batched_flow(upload, hashing, key, progress, files_progress)
        self.state.forget(key)
        if wait > 0:
            done = yield from self._wait_flow(done.id, wait, POLL_INTERVAL)
        return done

    def _writer_flow(self) -> Flow[WhoamiAnswer]:
        """whoami before any file is hashed: a token without ``write`` refused (403) at
        once, and the answer's ``multipartThreshold`` for the hashing of parts."""
        who = yield from ask(self._scopes_call())
        protocol.require_scope(who, "write")
        return who

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
        hashing: HashAhead,
        key: str,
        progress: ProgressCallback | None,
        files_progress: FilesCallback | None,
    ) -> Flow[TracesetAnswer]:
        """A new traceset: the files hashed in the background (``hashing``), in order;
        each batch declared (upload-url, then add-files) once hashed and its PUTs started,
        sent while the next batches are hashed and declared; then complete. An error after
        upload-url names the traceset, left pending for a resume."""
        files = hashing.files
        total = total_size(files)
        traceset_id: str | None = None
        yield hashing
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
        # Declared already: the service signed their parts' URLs then, so only the whole
        # file's sha256 is checked here, and no part is hashed (parts_above None).
        wanted = yield from hashed(still_to_send(files, traceset, status), hash_progress, None)
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
        """The token checked before hashing (``_writer_flow``); ``files`` hashed, declared
        in one add-files, sent."""
        who = yield from self._writer_flow()
        files = yield from hashed(files, None, who.multipartThreshold)
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
        chosen = places(dest, files)  # every name checked first
        counter = ProgressCounter(sum(f.size for f in files), progress)
        counter.start()
        flows = [self._download_one_flow(traceset.id, f, p, counter) for f, p in chosen]
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
