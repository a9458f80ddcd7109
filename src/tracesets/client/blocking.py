"""``Client``'s I/O: each step of a flow performed, blocking; PUTs and downloads on a
thread pool, ``concurrency`` at a time."""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any, TypeVar

import httpx

from tracesets.client.core import ClientCore
from tracesets.client.errors import ClientError
from tracesets.client.files import Download, LocalFile, Put, hash_file
from tracesets.client.plainhttp import PlainHttp
from tracesets.client.progress import ProgressCounter
from tracesets.client.steps import (
    HASH_AHEAD_THREADS,
    Attempts,
    Call,
    Disk,
    Each,
    Fetch,
    Flow,
    Hash,
    HashAhead,
    Hashed,
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
    #: PUTs (by ``sendfile``) and plain GETs to http:// URLs on ``http.client``; ``None``:
    #: every request through httpx.
    _plain: PlainHttp | None = None

    # -- performing the core's steps -------------------------------------------------------

    def _run(self, flow: Flow[T]) -> T:
        """Perform each step the flow asks for; a failure goes back into the flow. What
        the flow started in the background and did not wait for is stopped when it ends."""
        answer: Any = None
        failure: Exception | None = None
        background = _Running(self)
        try:
            while True:
                try:
                    step = flow.send(answer) if failure is None else flow.throw(failure)
                except StopIteration as done:
                    return done.value  # type: ignore[no-any-return]
                try:
                    answer, failure = self._perform(step, background), None
                except Exception as exc:  # thrown into the flow, which decides
                    answer, failure = None, exc
        except BaseException as exc:
            # Ctrl-C (or a cancelled task) stops the PUTs at once; an error lets them finish.
            background.close(abort=not isinstance(exc, Exception))
            raise
        finally:
            background.close(abort=False)

    def _perform(self, step: Step, background: _Running) -> Any:
        if isinstance(step, Call):
            return self._fetch(step)
        if isinstance(step, Hash):
            return self._hash(step)
        if isinstance(step, Fetch):
            return self._fetch_bytes(step)
        if isinstance(step, Disk):
            return step.work()
        if isinstance(step, HashAhead | Hashed | StartPuts | Puts | PutsDone):
            return background.perform(step)
        if isinstance(step, Each):
            return self._each(self._run, step.flows)
        time.sleep(step.seconds)
        return None

    def _fetch(self, call: Call[T]) -> T:
        args = self._request_args(call)
        plain = self._plain
        if plain is not None and not call.params and self.url.startswith("http://"):
            url, headers, body = self.url + call.path, args["headers"], args["content"]
            timeout = args["timeout"].read if "timeout" in args else None
            response = self._tries(
                lambda: plain.request(call.method, url, headers, body, timeout=timeout), call.what
            )
        else:
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
        return self._tries(lambda: self._http.send(build(), stream=stream), what, rewind)

    def _tries(
        self,
        attempt: Callable[[], httpx.Response],
        what: str,
        rewind: Callable[[], None] | None = None,
    ) -> httpx.Response:
        """``attempt()`` until an answer that is not worth retrying, or the retries run out."""
        attempts = Attempts(self.retry, what, rewind)
        while True:
            outcome: httpx.Response | Exception
            try:
                outcome = attempt()
            except httpx.TransportError as exc:
                outcome = exc
            kept = attempts.after(outcome)
            if isinstance(kept, httpx.Response):
                return kept
            if isinstance(outcome, httpx.Response):
                outcome.close()
            time.sleep(kept)

    def _fetch_bytes(self, fetch: Fetch) -> Path:
        plain = self._plain
        if plain is not None and fetch.url.scheme == "http":
            response = self._tries(
                lambda: plain.request("GET", fetch.url, {}, stream=True), fetch.what
            )
        else:
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
                pool.map(
                    lambda f: f if f.sha256 else hash_file(f, counter.add, step.parts_above),
                    step.files,
                )
            )

    def _put(self, put: Put, counter: ProgressCounter, abort: threading.Event) -> None:
        sending = Sending(put, counter)
        if self._plain is not None and put.url.startswith("http://"):
            plain = self._plain

            def moved(count: int) -> None:
                if abort.is_set():
                    raise _Cancelled
                sending.moved(count)

            def attempt() -> httpx.Response:
                return plain.send(
                    put.url, sending.headers, put.file.path, put.offset, put.length, moved
                )

            try:
                response = self._tries(attempt, sending.what, sending.rewind)
            except _Cancelled:
                return
            sending.check(response)
            return

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


class _Running:
    """What one flow runs in the background: its hashing ahead and its PUTs."""

    def __init__(self, io: BlockingIO) -> None:
        self.io = io
        self.hashing: _HashingAhead | None = None
        self.puts: _Background | None = None

    def perform(self, step: HashAhead | Hashed | StartPuts | Puts | PutsDone) -> Any:
        if isinstance(step, HashAhead):
            if self.hashing is not None:
                self.hashing.close()
            self.hashing = _HashingAhead(step)
            return None
        if isinstance(step, StartPuts):
            if self.puts is not None:
                self.puts.close(abort=False)
            self.puts = _Background(self.io, step)
            return None
        if isinstance(step, Hashed):
            if self.hashing is None:
                raise RuntimeError("Hashed before HashAhead")
            return self.hashing.next(step.count)
        if self.puts is None:
            raise RuntimeError("PUTs asked for before StartPuts")
        if isinstance(step, Puts):
            return self.puts.add(step.puts, step.counted)
        return self.puts.wait()

    def close(self, *, abort: bool) -> None:
        if self.hashing is not None:
            self.hashing.close()
        if self.puts is not None:
            self.puts.close(abort=abort)


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


class _HashingAhead:
    """``HashAhead``'s files hashed in order on a few threads of their own; closing it
    stops each file being hashed at its next chunk."""

    def __init__(self, step: HashAhead) -> None:
        self.counter = hash_counter(step)
        self.parts_above = step.parts_above
        self.stop = threading.Event()
        self.pool = ThreadPoolExecutor(HASH_AHEAD_THREADS)
        self.futures = deque(self.pool.submit(self._one, file) for file in step.files)

    def _one(self, file: LocalFile) -> LocalFile:
        if file.sha256 is not None:
            return file
        return hash_file(file, self._read, self.parts_above)

    def _read(self, count: int) -> None:
        if self.stop.is_set():
            raise _Cancelled
        self.counter.add(count)

    def next(self, count: int) -> list[LocalFile]:
        if count > len(self.futures):
            raise RuntimeError("Hashed asks for more files than HashAhead was given")
        return [self.futures.popleft().result() for _ in range(count)]

    def close(self) -> None:
        self.stop.set()
        self.pool.shutdown(wait=True, cancel_futures=True)
