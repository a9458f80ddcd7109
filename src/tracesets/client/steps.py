"""The steps a client flow asks for, and the small objects both clients share to do them.

A flow (``ClientCore``'s ``_..._flow`` generators) yields steps and gets their results:

    Call     one API request, retried; the flow gets the answer, read and typed
    Hash     each file's sha256 (files that have one keep it); the flow gets the files
    HashAhead, Hashed
             the same in the background, file after file, while the flow goes on; the
             flow gets the next files hashed when it asks for them
    StartPuts, Puts, PutsDone
             PUTs sent in the background, ``concurrency`` at a time, while the flow
             goes on (hashing and declaring the next files); then waited for
    Sleep    a pause
    Fetch    a signed URL's bytes streamed into a file, checked
    Disk     local file work, off the event loop for the async client
    Each     flows run ``concurrency`` at a time (a traceset's downloads)

``Attempts`` decides retries and ``Sending`` follows one PUT's bytes, the same way for
both clients; neither sends anything.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Generic, TypeVar, cast

import httpx

from tracesets.client import protocol
from tracesets.client.errors import ClientError
from tracesets.client.files import LocalFile, Put, already_stored, read_range, total_size
from tracesets.client.progress import FilesCallback, ProgressCallback, ProgressCounter
from tracesets.client.retry import RetryPolicy

T = TypeVar("T")
Params = Mapping[str, str | int | float]


@dataclass(frozen=True, slots=True)
class Call(Generic[T]):
    """One API request and how to read its answer."""

    method: str
    path: str
    what: str  # how errors name it: "upload-url", "download rank0.json"
    read: Callable[[httpx.Response], T]
    body: Any = None
    params: Params | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    expect: int = 200
    #: Seconds to wait for this answer when longer than the client's timeout.
    timeout: float | None = None


@dataclass(frozen=True, slots=True)
class Hash:
    files: list[LocalFile]
    progress: ProgressCallback | None
    #: ``hash_file``'s: above which size each part's digest is computed too.
    parts_above: int | None = 0


#: Threads hashing ahead of the PUTs: sha256 runs at 1.5 GB/s or more a core, far ahead of
#: what is sent, and more threads would take cores from the sending (and the service).
HASH_AHEAD_THREADS: Final = 2


@dataclass(frozen=True, slots=True)
class HashAhead:
    """``files`` hashed in the background, in order, ``HASH_AHEAD_THREADS`` at a time; a
    flow's earlier hashing ahead is stopped first."""

    files: list[LocalFile]
    progress: ProgressCallback | None
    #: ``hash_file``'s: above which size each part's digest is computed too.
    parts_above: int | None = 0


@dataclass(frozen=True, slots=True)
class Hashed:
    """The next ``count`` files of ``HashAhead``, hashed: waited for if need be; a file
    that could not be read raises its error here."""

    count: int


@dataclass(frozen=True, slots=True)
class StartPuts:
    """A new set of background PUTs, ``total`` bytes and ``count`` transfers in all (the
    ``Puts`` that follow; a file each, until a file goes in parts); one not waited for is
    stopped first (no new PUT of it starts, those running finish)."""

    total: int
    count: int
    progress: ProgressCallback | None
    files: FilesCallback | None = None


@dataclass(frozen=True, slots=True)
class Puts:
    """PUTs started in the background, ``concurrency`` at a time in all; the flow goes
    on at once. Raises the first failure of an earlier PUT, if any: after a failure no
    new PUT starts, but those in flight finish, so a resume has less to send."""

    puts: list[Put]
    #: Transfers ``StartPuts`` counted for these PUTs: their files.
    counted: int


@dataclass(frozen=True, slots=True)
class PutsDone:
    """Every PUT started waited for; the first failure raised. A flow that ends without
    it (an error, say) has its PUTs stopped as ``StartPuts`` stops them."""


@dataclass(frozen=True, slots=True)
class Sleep:
    seconds: float


@dataclass(frozen=True, slots=True)
class Fetch:
    """A signed URL's bytes streamed into ``target``, checked against ``sha256``."""

    url: httpx.URL
    target: Path
    sha256: str | None
    progress: ProgressCallback | None
    what: str


@dataclass(frozen=True, slots=True)
class Disk:
    """Local file work (``work()``), off the event loop for the async client."""

    work: Callable[[], Any]


@dataclass(frozen=True, slots=True)
class Each:
    """Flows run ``concurrency`` at a time; after a failure no new one starts, those
    running finish, and the first error is raised. The flow gets their results."""

    flows: list[Generator[Any, Any, Any]]


Step = (
    Call[Any]
    | Hash
    | HashAhead
    | Hashed
    | StartPuts
    | Puts
    | PutsDone
    | Sleep
    | Fetch
    | Disk
    | Each
)
Flow = Generator[Step, Any, T]


def ask(call: Call[T]) -> Flow[T]:
    """The answer to ``call``, typed, inside a flow: ``x = yield from ask(call)``."""
    return cast(T, (yield call))


def hashed(
    files: list[LocalFile], progress: ProgressCallback | None, parts_above: int | None = 0
) -> Flow[list[LocalFile]]:
    return cast(list[LocalFile], (yield Hash(files, progress, parts_above)))


def hashed_next(count: int) -> Flow[list[LocalFile]]:
    return cast(list[LocalFile], (yield Hashed(count)))


def hash_counter(step: Hash | HashAhead) -> ProgressCounter:
    counter = ProgressCounter(total_size(f for f in step.files if f.sha256 is None), step.progress)
    counter.start()
    return counter


def reading(model: type[protocol.Model], what: str) -> Callable[[httpx.Response], protocol.Model]:
    """The answer read into a wire model (pydantic)."""
    return lambda response: protocol.parse(model, response, what)


def light(
    reader: Callable[[Mapping[str, Any]], protocol.A], what: str
) -> Callable[[httpx.Response], protocol.A]:
    """The answer read by one of the client's own readers (``answers``)."""
    return lambda response: protocol.read(reader, response, what)


def nothing(response: httpx.Response) -> None:
    return None


def location(response: httpx.Response) -> httpx.URL:
    return response.url.join(response.headers["location"])


class Attempts:
    """The retry decisions of one request: keep this answer, or wait and send again."""

    def __init__(
        self, policy: RetryPolicy, what: str, rewind: Callable[[], None] | None = None
    ) -> None:
        self.policy = policy
        self.what = what
        self.rewind = rewind
        self.attempt = 0

    def after(self, outcome: httpx.Response | Exception) -> httpx.Response | float:
        """The answer to keep, or the seconds to wait before the next try; ClientError
        when the tries run out with no answer. A body sent in vain is given back."""
        last = self.attempt >= self.policy.retries or not self.policy.retryable(outcome)
        if isinstance(outcome, httpx.Response) and last:
            return outcome
        if self.rewind is not None:
            self.rewind()
        if isinstance(outcome, Exception) and last:
            raise ClientError.no_answer(self.what, outcome) from outcome
        delay = self.policy.delay(self.attempt, outcome)
        self.attempt += 1
        return delay


class Sending:
    """One PUT's bytes as they go: counted into the upload's progress, and given back
    when a try fails and the bytes must go again."""

    def __init__(self, put: Put, counter: ProgressCounter) -> None:
        self.put = put
        self.counter = counter
        self.sent = 0
        self.what = f"PUT {put.label}"
        # An explicit Content-Length: signed URLs (S3's above all) refuse chunked bodies.
        self.headers = {**put.headers, "Content-Length": str(put.length)}
        counter.began(put.label)

    def chunks(self) -> Iterator[bytes]:
        for chunk in read_range(self.put.file.path, self.put.offset, self.put.length):
            self.moved(len(chunk))
            yield chunk

    def moved(self, count: int) -> None:
        """``count`` more bytes of this PUT's body went."""
        self.sent += count
        self.counter.add(count)

    def rewind(self) -> None:
        self.counter.add(-self.sent)
        self.sent = 0

    def check(self, response: httpx.Response) -> None:
        if not response.is_success and not already_stored(self.put, response.status_code):
            raise ClientError.from_response(response, self.what)
        self.counter.ended(self.put.label)
