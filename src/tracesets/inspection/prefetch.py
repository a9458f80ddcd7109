"""The next files' bytes fetched while this one is read: a store's latency, hidden.

A rank's trace costs a few milliseconds of CPU to read, and as much or more to fetch
from S3 (a HEAD and a GET, each a round trip). Fetched one after the other, a job of
thousands of ranks waits on the network half the time; fetched ``depth`` files ahead
by threads (the wait releases the GIL), it waits only for the first. Each file is
fetched with ``read_once``, so at most ``depth`` small files (``READ_ONCE_LIMIT`` each)
are held ahead; a larger file is only opened ahead and read by ranges when its turn comes.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Generator, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Final

from tracesets.inspection.source import ByteSource, read_once

#: Files fetched ahead of the one being read.
DEPTH: Final = 8


def _fetch(open_source: Callable[[], ByteSource]) -> ByteSource:
    return read_once(open_source())


def read_ahead(
    openers: Iterable[Callable[[], ByteSource]], *, depth: int = DEPTH
) -> Generator[ByteSource, None, None]:
    """Each opener's source, in order, fetched up to ``depth`` ahead. A failure to open
    or fetch one is raised when its turn comes, as if it had been fetched then."""
    pending: deque[Future[ByteSource]] = deque()
    remaining = iter(openers)
    with ThreadPoolExecutor(max_workers=depth, thread_name_prefix="read-ahead") as pool:
        try:
            for opener in remaining:
                pending.append(pool.submit(_fetch, opener))
                if len(pending) >= depth:
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()
        finally:  # stopped early (a failure, a caller that stops): fetch nothing more
            for future in pending:
                future.cancel()
