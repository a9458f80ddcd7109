"""Inspecting one traceset file: what its bytes are, then each trace in them.

Kinds are told by their bytes, never their names: gzip by its magic bytes, zip by
``PK``, tar by ``ustar`` at byte 257, JSON by its opening brace, and the kind of JSON
trace by its top-level members. Only formats whose bytes Tracesets does not read
(Nsight Systems reports, Chakra protobuf ``.et``) are known by their extension.

Archives are opened at the top level only: an archive inside an archive is reported,
not opened, so that the work a file can cause stays bounded by its own size.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Final

from tracesets.inspection.archives import (
    Member,
    is_tar,
    is_zip,
    tar_members,
    tar_stream_members,
    zip_members,
)
from tracesets.inspection.budget import file_budget
from tracesets.inspection.chakra import NO_RANK
from tracesets.inspection.decompress import GZIP_MAGIC, Readable, open_gzip
from tracesets.inspection.distributed import Claim
from tracesets.inspection.failures import describe
from tracesets.inspection.findings import FileFinding
from tracesets.inspection.jsonscan import Head, first_significant
from tracesets.inspection.names import format_by_name, rank_in_name
from tracesets.inspection.source import (
    READ_AHEAD,
    ByteSource,
    SourceError,
    fetch,
    inflated_already,
    open_source,
)
from tracesets.inspection.traces import Reading, Tails, read_json_trace, read_source, read_stream

#: Enough bytes to tell every kind apart (tar's magic is at 257).
SNIFF_BYTES: Final = 512

_UNNAMED_RANK: Final = {
    "nsys-rep": "an Nsight Systems report gives its rank only in its file name, and this one does not",
    "et": "a Chakra protobuf trace gives its rank only in its file name, and this one does not",
}


class Replay:
    """A stream whose first bytes were already read to tell its kind: them, then the rest."""

    def __init__(self, prefix: bytes, rest: Readable) -> None:
        self._prefix = prefix
        self._rest = rest

    def read(self, size: int = -1, /) -> bytes:
        if self._prefix:
            taken = self._prefix if size < 0 else self._prefix[:size]
            self._prefix = self._prefix[len(taken) :]
            return taken
        return self._rest.read(size)


def _finding(file: str, member: str | None, fmt: str, size: int, reading: Reading) -> FileFinding:
    """The finding of one trace: its own claim, and its file name's when it has no rank."""
    claim = reading.claim
    rank, problem = claim.rank, claim.problem
    rank_source: str | None = reading.rank_source
    if rank is None and reading.readable:
        named = rank_in_name(member if member is not None else file)
        if named is not None:
            rank, rank_source, problem = named, "file name", None
            if claim.world_size is not None and named >= claim.world_size:
                problem = (
                    f"rank {named:,} (from its file name) is not below the world size "
                    f"{claim.world_size:,}"
                )
        elif problem == NO_RANK:
            problem = f"{NO_RANK}, and its file name does not say it"
    return FileFinding(
        file=file,
        member=member,
        format=fmt,
        size=size,
        rank=rank,
        world_size=claim.world_size,
        backend=claim.backend,
        rank_source=rank_source,
        problem=problem,
        readable=reading.readable,
    )


def _unreadable(file: str, member: str | None, size: int, problem: str) -> FileFinding:
    return FileFinding(file, member, "unknown", size, problem=problem, readable=False)


def _by_name_or_unknown(file: str, member: str | None, size: int, what: str) -> FileFinding:
    name = member if member is not None else file
    fmt = format_by_name(name.removesuffix(".gz"))
    if fmt is None:
        return _unreadable(file, member, size, f"not a trace Tracesets can read ({what})")
    return _finding(file, member, fmt, size, Reading("unknown", Claim(problem=_UNNAMED_RANK[fmt])))


def _describe_start(data: bytes) -> str:
    if first_significant(data) is None:
        return "only whitespace" if data else "empty"
    return f"it starts with {data[:16]!r}"


def read_up_to(stream: Readable, length: int) -> bytes:
    data = b""
    while len(data) < length:
        more = stream.read(length - len(data))
        if not more:
            break
        data += more
    return data


def _trace(
    file: str, member: str | None, size: int, head: Head, tails: Tails, *, gzipped: bool
) -> FileFinding:
    head.more()
    if first_significant(head.data) != ord("{"):
        return _by_name_or_unknown(file, member, size, _describe_start(head.data[:SNIFF_BYTES]))
    reading = read_json_trace(head, tails)
    fmt = {"kineto": "kineto-json", "chakra": "chakra-host-et", "unknown": "unknown"}[reading.kind]
    if reading.kind == "kineto" and gzipped:
        fmt = "kineto-json-gzip"
    return _finding(file, member, fmt, size, reading)


def _inspect_bytes(
    file: str,
    member: str | None,
    size: int,
    source: ByteSource | None,
    stream: Readable | None,
    *,
    top: bool,
) -> list[FileFinding]:
    """The findings of some bytes, by offset (``source``) or in order (``stream``): one is given."""
    name = member if member is not None else file
    if format_by_name(name) == "nsys-rep":  # opaque to Tracesets: its name is all it says
        return [_by_name_or_unknown(file, member, size, "")]
    if source is not None:
        magic = fetch(source, 0, SNIFF_BYTES)
    elif stream is not None:
        magic = read_up_to(stream, SNIFF_BYTES)
        stream = Replay(magic, stream)
    else:
        raise ValueError("nothing to inspect: neither a source nor a stream")
    if not magic:
        return [_unreadable(file, member, size, "the file is empty")]
    gzipped = magic.startswith(GZIP_MAGIC)
    if gzipped:
        inflated = None if source is None else inflated_already(source)
        decompressed: Readable
        if inflated is not None:  # the figures' pass inflated it whole: the same bytes
            decompressed = io.BytesIO(inflated)
        else:
            compressed = open_source(source, READ_AHEAD) if source is not None else stream
            assert compressed is not None
            decompressed = open_gzip(compressed)
        magic = read_up_to(decompressed, SNIFF_BYTES)
        source, stream = None, Replay(magic, decompressed)
    if is_zip(magic) or is_tar(magic):
        if not top:
            return [_unreadable(file, member, size, "an archive inside an archive is not opened")]
        if source is not None:
            members = zip_members(source) if is_zip(magic) else tar_members(source)
            return _inspect_archive(file, size, members)
        if stream is not None and is_tar(magic):
            return _inspect_archive(file, size, tar_stream_members(stream))
        return [_unreadable(file, member, size, "a zip archive inside gzip is not opened")]
    if source is not None:
        head, tails = read_source(source)
    else:
        assert stream is not None
        head, tails = read_stream(stream)
    return [_trace(file, member, size, head, tails, gzipped=gzipped)]


def _inspect_member(file: str, member: Member) -> FileFinding:
    if member.problem is not None:
        return _unreadable(file, member.name, member.size, member.problem)
    try:
        stream = member.open() if member.source is None and member.open is not None else None
        found = _inspect_bytes(file, member.name, member.size, member.source, stream, top=False)
    except SourceError:
        raise
    except Exception as error:
        return _unreadable(file, member.name, member.size, describe(error))
    return found[0]


def _inspect_archive(file: str, size: int, members: Iterator[Member]) -> list[FileFinding]:
    """One finding per member; an archive that breaks part way keeps what came before."""
    findings: list[FileFinding] = []
    try:
        for member in members:
            findings.append(_inspect_member(file, member))
    except SourceError:
        raise
    except Exception as error:
        where = "past its first members" if findings else "as an archive"
        findings.append(
            _unreadable(file, None, size, f"could not be read {where}: {describe(error)}")
        )
    if not findings:
        findings.append(_unreadable(file, None, size, "the archive holds no files"))
    return findings


def inspect_file(name: str, source: ByteSource) -> list[FileFinding]:
    """What each trace in one traceset file claims: one finding per trace, archives per member.

    Bad bytes of any kind become a finding whose ``problem`` says what is wrong, never an
    exception; only a failure of ``source`` itself is raised, as ``SourceError``.
    """
    try:
        with file_budget():
            return _inspect_bytes(name, None, source.size, source, None, top=True)
    except SourceError:
        raise
    except Exception as error:
        return [_unreadable(name, None, source.size, describe(error))]
