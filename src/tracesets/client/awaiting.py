"""``AsyncClient``'s I/O: each step of a flow awaited; files read and hashed on worker
threads, so the event loop never waits on the disk."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import httpx

from tracesets.client.core import ClientCore
from tracesets.client.errors import ClientError
from tracesets.client.files import Download, LocalFile, Put, hash_file
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


class AwaitingIO(ClientCore):
    """The I/O of the steps ``ClientCore``'s flows ask for."""

    _http: httpx.AsyncClient

    # -- performing the core's steps -------------------------------------------------------

    async def _run(self, flow: Flow[T]) -> T:
        """``Client._run``, each step awaited."""
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
                    answer, failure = await self._perform(step, background), None
                except Exception as exc:  # thrown into the flow, which decides
                    answer, failure = None, exc
        except BaseException as exc:
            # Ctrl-C (or a cancelled task) stops the PUTs at once; an error lets them finish.
            await background.close(abort=not isinstance(exc, Exception))
            raise
        finally:
            await background.close(abort=False)

    async def _perform(self, step: Step, background: _Running) -> Any:
        if isinstance(step, Call):
            return await self._fetch(step)
        if isinstance(step, Hash):
            return await self._hash(step)
        if isinstance(step, Fetch):
            return await self._fetch_bytes(step)
        if isinstance(step, Disk):
            return await asyncio.to_thread(step.work)
        if isinstance(step, HashAhead | Hashed | StartPuts | Puts | PutsDone):
            return await background.perform(step)
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

    async def _hash(self, step: Hash) -> list[LocalFile]:
        counter = hash_counter(step)
        limit = asyncio.Semaphore(self.concurrency)

        async def one(file: LocalFile) -> LocalFile:
            if file.sha256 is not None:
                return file  # computed once: a resume does not hash again
            async with limit:
                return await asyncio.to_thread(hash_file, file, counter.add, step.parts_above)

        return await _all_or_none([one(f) for f in step.files])

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


class _Running:
    """What one flow runs in the background: its hashing ahead and its PUTs."""

    def __init__(self, io: AwaitingIO) -> None:
        self.io = io
        self.hashing: _HashingAhead | None = None
        self.puts: _Background | None = None

    async def perform(self, step: HashAhead | Hashed | StartPuts | Puts | PutsDone) -> Any:
        if isinstance(step, HashAhead):
            if self.hashing is not None:
                await self.hashing.close()
            self.hashing = _HashingAhead(step)
            return None
        if isinstance(step, StartPuts):
            if self.puts is not None:
                await self.puts.close(abort=False)
            self.puts = _Background(self.io, step)
            return None
        if isinstance(step, Hashed):
            if self.hashing is None:
                raise RuntimeError("Hashed before HashAhead")
            return await self.hashing.next(step.count)
        if self.puts is None:
            raise RuntimeError("PUTs asked for before StartPuts")
        if isinstance(step, Puts):
            return self.puts.add(step.puts, step.counted)
        return await self.puts.wait()

    async def close(self, *, abort: bool) -> None:
        if self.hashing is not None:
            await self.hashing.close()
        if self.puts is not None:
            await self.puts.close(abort=abort)


class _Background:
    """The PUTs of one ``StartPuts`` as tasks, ``concurrency`` at a time. After a failure
    no new PUT starts, but those in flight finish; cancelling the flow cancels them."""

    def __init__(self, io: AwaitingIO, step: StartPuts) -> None:
        self.io = io
        self.counter = ProgressCounter(step.total, step.progress, step.files, step.count)
        self.counter.start()
        self.limit = asyncio.Semaphore(io.concurrency)
        self.tasks: list[asyncio.Task[None]] = []
        self.stopped = False

    def add(self, puts: list[Put], counted: int) -> None:
        self.raise_failure()
        if len(puts) != counted:  # files sent in parts
            self.counter.expect(len(puts) - counted)
        self.tasks += [asyncio.ensure_future(self._one(put)) for put in puts]

    async def _one(self, put: Put) -> None:
        async with self.limit:
            if self.stopped:
                return
            try:
                await self.io._put(put, self.counter)
            except BaseException:
                self.stopped = True
                raise

    def raise_failure(self) -> None:
        for task in self.tasks:
            if task.done() and not task.cancelled() and (error := task.exception()) is not None:
                raise error

    async def wait(self) -> None:
        await asyncio.gather(*self.tasks, return_exceptions=True)
        self.raise_failure()

    async def close(self, *, abort: bool) -> None:
        self.stopped = True
        if abort:
            for task in self.tasks:
                task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)


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


class _HashingAhead:
    """``HashAhead``'s files hashed in order on worker threads, a few at a time; closing
    it stops each file being hashed at its next chunk."""

    def __init__(self, step: HashAhead) -> None:
        self.counter = hash_counter(step)
        self.parts_above = step.parts_above
        self.stopped = False
        self.limit = asyncio.Semaphore(HASH_AHEAD_THREADS)
        self.tasks = deque(asyncio.ensure_future(self._one(file)) for file in step.files)

    async def _one(self, file: LocalFile) -> LocalFile:
        if file.sha256 is not None:
            return file
        async with self.limit:
            return await asyncio.to_thread(hash_file, file, self._read, self.parts_above)

    def _read(self, count: int) -> None:
        if self.stopped:
            raise _Stopped
        self.counter.add(count)

    async def next(self, count: int) -> list[LocalFile]:
        if count > len(self.tasks):
            raise RuntimeError("Hashed asks for more files than HashAhead was given")
        return [await self.tasks.popleft() for _ in range(count)]

    async def close(self) -> None:
        self.stopped = True
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)


class _Stopped(Exception):
    """The hashing ahead was closed: stop reading."""
