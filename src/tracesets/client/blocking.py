"""``Client``'s I/O: each step of a flow performed, blocking; PUTs and downloads on a
thread pool, ``concurrency`` at a time."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any, TypeVar

import httpx

from tracesets.client.core import ClientCore
from tracesets.client.errors import ClientError
from tracesets.client.files import Download, LocalFile, Put, hash_file
from tracesets.client.progress import ProgressCounter
from tracesets.client.steps import (
    Attempts,
    Call,
    Disk,
    Each,
    Fetch,
    Flow,
    Hash,
    Puts,
    PutsDone,
    Sending,
    StartPuts,
    Step,
    hash_counter,
)

T = TypeVar("T")


class _Cancelled(Exception):
    """The upload was interrupted (Ctrl-C): stop sending."""


class BlockingIO(ClientCore):
    """The I/O of the steps ``ClientCore``'s flows ask for."""

    _http: httpx.Client

    # -- performing the core's steps -------------------------------------------------------

    def _run(self, flow: Flow[T]) -> T:
        """Perform each step the flow asks for; a failure goes back into the flow. PUTs
        the flow started and did not wait for are stopped when it ends."""
        answer: Any = None
        failure: Exception | None = None
        puts: list[_Background] = []  # the flow's background PUTs, once it starts some
        try:
            while True:
                try:
                    step = flow.send(answer) if failure is None else flow.throw(failure)
                except StopIteration as done:
                    return done.value  # type: ignore[no-any-return]
                try:
                    answer, failure = self._perform(step, puts), None
                except Exception as exc:  # thrown into the flow, which decides
                    answer, failure = None, exc
        except BaseException as exc:
            for running in puts:  # Ctrl-C (or a cancelled task) stops them at once
                running.close(abort=not isinstance(exc, Exception))
            raise
        finally:
            for running in puts:
                running.close(abort=False)

    def _background(self, step: StartPuts | Puts | PutsDone, puts: list[_Background]) -> None:
        if isinstance(step, StartPuts):
            for running in puts:
                running.close(abort=False)
            puts[:] = [_Background(self, step)]
        elif not puts:
            raise RuntimeError("PUTs asked for before StartPuts")
        elif isinstance(step, Puts):
            puts[0].add(step.puts, step.counted)
        else:
            puts[0].wait()

    def _perform(self, step: Step, puts: list[_Background]) -> Any:
        if isinstance(step, Call):
            return self._fetch(step)
        if isinstance(step, Hash):
            return self._hash(step)
        if isinstance(step, Fetch):
            return self._fetch_bytes(step)
        if isinstance(step, Disk):
            return step.work()
        if isinstance(step, StartPuts | Puts | PutsDone):
            return self._background(step, puts)
        if isinstance(step, Each):
            return self._each(self._run, step.flows)
        time.sleep(step.seconds)
        return None

    def _fetch(self, call: Call[T]) -> T:
        args = self._request_args(call)
        response = self._send(lambda: self._http.build_request(**args), call.what)
        return self._answer(call, response)

    def _send(
        self,
        build: Callable[[], httpx.Request],
        what: str,
        *,
        rewind: Callable[[], None] | None = None,
        stream: bool = False,
    ) -> httpx.Response:
        """Send until an answer that is not worth retrying, or the retries run out."""
        attempts = Attempts(self.retry, what, rewind)
        while True:
            outcome: httpx.Response | Exception
            try:
                outcome = self._http.send(build(), stream=stream)
            except httpx.TransportError as exc:
                outcome = exc
            kept = attempts.after(outcome)
            if isinstance(kept, httpx.Response):
                return kept
            if isinstance(outcome, httpx.Response):
                outcome.close()
            time.sleep(kept)

    def _fetch_bytes(self, fetch: Fetch) -> Path:
        response = self._send(
            lambda: self._http.build_request("GET", fetch.url), fetch.what, stream=True
        )
        sink = Download(fetch.target, fetch.sha256)
        try:
            if response.status_code != 200:
                response.read()
                raise ClientError.from_response(response, fetch.what)
            counter = ProgressCounter(
                int(response.headers.get("content-length", 0)), fetch.progress
            )
            counter.start()
            for chunk in response.iter_bytes():
                sink.write(chunk)
                counter.add(len(chunk))
            return sink.finish()
        except BaseException:
            sink.discard()
            raise
        finally:
            response.close()

    # -- the thread pool -------------------------------------------------------------------

    def _each(
        self,
        job: Callable[[Any], T],
        items: Sequence[Any],
    ) -> list[T | None]:
        """``job`` of every item, ``concurrency`` at a time, results in order. After a
        failure no new job starts but those running finish; the first error is raised."""
        stop = threading.Event()

        def guarded(item: Any) -> T | None:
            if stop.is_set():
                return None
            try:
                return job(item)
            except BaseException:
                stop.set()
                raise

        with ThreadPoolExecutor(self.concurrency) as pool:
            futures: list[Future[T | None]] = [pool.submit(guarded, item) for item in items]
            try:
                wait(futures)
            except BaseException:
                stop.set()
                raise
        for future in futures:
            if (error := future.exception()) is not None:
                raise error
        return [future.result() for future in futures]

    def _hash(self, step: Hash) -> list[LocalFile]:
        """Each file's sha256, computed once: files that have one keep it."""
        counter = hash_counter(step)
        with ThreadPoolExecutor(self.concurrency) as pool:
            return list(
                pool.map(lambda f: f if f.sha256 else hash_file(f, counter.add), step.files)
            )

    def _put(self, put: Put, counter: ProgressCounter, abort: threading.Event) -> None:
        sending = Sending(put, counter)

        def body() -> Iterator[bytes]:
            for chunk in sending.chunks():
                if abort.is_set():
                    raise _Cancelled
                yield chunk

        try:
            response = self._send(
                lambda: self._http.build_request(
                    "PUT", put.url, content=body(), headers=sending.headers
                ),
                sending.what,
                rewind=sending.rewind,
            )
        except _Cancelled:
            return
        sending.check(response)


class _Background:
    """The PUTs of one ``StartPuts``, ``concurrency`` at a time on a pool of their own.
    After a failure no new PUT starts, but those in flight finish, so a resume has less
    to send; Ctrl-C stops them at their next chunk."""

    def __init__(self, io: BlockingIO, step: StartPuts) -> None:
        self.io = io
        self.counter = ProgressCounter(step.total, step.progress, step.files, step.count)
        self.counter.start()
        self.pool = ThreadPoolExecutor(io.concurrency)
        self.futures: list[Future[None]] = []
        self.stop = threading.Event()
        self.abort = threading.Event()

    def add(self, puts: list[Put], counted: int) -> None:
        self.raise_failure()
        if len(puts) != counted:  # files sent in parts
            self.counter.expect(len(puts) - counted)
        self.futures += [self.pool.submit(self._one, put) for put in puts]

    def _one(self, put: Put) -> None:
        if self.stop.is_set():
            return
        try:
            self.io._put(put, self.counter, self.abort)
        except BaseException:
            self.stop.set()
            raise

    def raise_failure(self) -> None:
        for future in self.futures:
            if future.done() and (error := future.exception()) is not None:
                raise error

    def wait(self) -> None:
        try:
            wait(self.futures)
        except BaseException:
            self.close(abort=True)
            raise
        self.raise_failure()

    def close(self, *, abort: bool) -> None:
        self.stop.set()
        if abort:
            self.abort.set()
        self.pool.shutdown(wait=True)
