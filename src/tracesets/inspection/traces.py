"""One trace's bytes, once decompressed: which kind of JSON trace it is, and what it claims.

A trace is read from its head, then, only when the head does not say, from its tail:
``read_source`` gives both cheaply for bytes that can be read anywhere (a plain file, a
member stored whole in an archive), ``read_stream`` for bytes that can only be read in
order (gzip, a deflated zip member), where reaching the tail means reading everything
while keeping only its last ``TAIL_WINDOW`` bytes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Final, Literal

from tracesets.inspection.chakra import read_process_groups
from tracesets.inspection.decompress import Readable
from tracesets.inspection.distributed import Claim, read_distributed_info
from tracesets.inspection.failures import describe
from tracesets.inspection.jsonscan import (
    CHUNK,
    TAIL_WINDOW,
    Head,
    ValueUnreadable,
    decode_value,
    find_key,
    find_last_key,
    resume_at,
    stream_tail,
)
from tracesets.inspection.source import ByteSource, SourceError, fetch

Kind = Literal["kineto", "chakra", "unknown"]
#: Each tail to search, largest last, with where it starts in the trace.
Tails = Callable[[], Iterator[tuple[int, bytes]]]

#: Members only a PyTorch profiler trace has at its top level.
KINETO_KEYS: Final = ("traceEvents", "schemaVersion", "distributedInfo", "deviceProperties")

NO_DISTRIBUTED_INFO: Final = (
    "the trace has no distributedInfo (PyTorch writes it only when torch.distributed "
    "is initialised)"
)
NOT_A_TRACE: Final = (
    "JSON, but neither a PyTorch profiler trace (no traceEvents) nor a Chakra host trace (no nodes)"
)


@dataclass(frozen=True, slots=True)
class Reading:
    """What one trace's bytes said, before its file name is asked."""

    kind: Kind
    claim: Claim
    rank_source: Literal["header", "tail"] | None = None
    readable: bool = True


def read_source(source: ByteSource) -> tuple[Head, Tails]:
    """Head and tails of bytes read by offset: the last 64 KiB, then the last 4 MiB."""
    position = 0

    def read(length: int) -> bytes:
        nonlocal position
        data = fetch(source, position, length)
        position += len(data)
        return data

    def tails() -> Iterator[tuple[int, bytes]]:
        for window in (CHUNK, TAIL_WINDOW):
            start = max(0, source.size - window)
            yield start, fetch(source, start, window)
            if start == 0:
                return

    return Head(read), tails


def read_stream(stream: Readable) -> tuple[Head, Tails]:
    """Head and tail of bytes read in order: the tail is what is left after reading them all."""
    head = Head(stream.read)

    def tails() -> Iterator[tuple[int, bytes]]:
        yield stream_tail(head)

    return head, tails


def kind_of(head: Head) -> Kind | None:
    """``kineto`` or ``chakra`` by the top-level members the head shows; None for neither.

    Each chunk read is searched once: JSON that is no trace is read to the head's end, and
    searching the whole head again at each chunk made that quadratic (16 chunks, 136
    searches a name)."""
    searched = 0
    nodes = schema = False

    def found(name: str) -> bool:
        return find_key(head.data, name, resume_at(head.data, searched, name)) is not None

    while True:
        if any(found(key) for key in KINETO_KEYS):
            return "kineto"
        nodes = nodes or found("nodes")
        schema = schema or found("schema")
        if nodes and schema:
            return "chakra"
        searched = len(head.data)
        if not head.more():
            return None


def _claim_at(data: bytes, at: int, where: Literal["header", "tail"]) -> Reading:
    try:
        claim = read_distributed_info(decode_value(data, at))
    except ValueUnreadable as error:
        return Reading(
            "kineto", Claim(problem=f"its distributedInfo could not be decoded: {error}")
        )
    return Reading("kineto", claim, where if claim.rank is not None else None)


def _read_kineto(head: Head, tails: Tails) -> Reading:
    events_at = head.until_key("traceEvents")
    head_end = len(head.data) if events_at is None else events_at
    info_at = find_last_key(head.data, "distributedInfo", 0, head_end)
    if info_at is not None:
        return _claim_at(head.data, info_at, "header")
    for start, tail in tails():
        after_events = 0 if events_at is None else max(0, events_at - start)
        info_at = find_last_key(tail, "distributedInfo", after_events)
        if info_at is not None:
            return _claim_at(tail, info_at, "tail")
    return Reading("kineto", Claim(problem=NO_DISTRIBUTED_INFO))


def read_json_trace(head: Head, tails: Tails) -> Reading:
    """The reading of a JSON trace whose first chunk is in ``head``; never raises for bad bytes."""
    kind: Kind = "unknown"
    try:
        found = kind_of(head)
        if found is None:
            return Reading("unknown", Claim(problem=NOT_A_TRACE), readable=False)
        kind = found
        if kind == "chakra":
            return Reading("chakra", read_process_groups(head))
        return _read_kineto(head, tails)
    except SourceError:
        raise
    except Exception as error:
        return Reading(kind, Claim(problem=describe(error)), readable=False)
