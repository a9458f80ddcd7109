"""The members of zip and tar archives, one at a time, never extracted to disk.

``zipfile`` and ``tarfile`` read the archive through the seekable adapter over its
``ByteSource``: the zip's central directory, each tar header. A member stored whole (a
zip member stored without compression, any member of a plain tar) becomes a window onto
the source, read by offset like a plain file; a compressed member is a stream, read in
order. A tar inside gzip (``.tar.gz``) can only be read in order, member after member.

Zip bombs are refused twice: a member whose declared size is past ``BOMB_FLOOR`` and
more than ``MAX_RATIO`` times its compressed size is not opened, and all the bytes
decompressed from one archive may not pass ``MAX_RATIO`` times the archive's size
(``zipfile`` itself stops each member at its declared size).
"""

from __future__ import annotations

import tarfile
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import IO, Final, cast

from isal import isal_zlib

from tracesets.inspection.decompress import MAX_RATIO, Readable, Refused, is_bomb, refusal
from tracesets.inspection.source import ByteSource, SliceSource, fetch, open_source

#: Past this many members, the rest of an archive is not inspected.
MAX_MEMBERS: Final = 100_000

ZIP_MAGICS: Final = (b"PK\x03\x04", b"PK\x05\x06")
_LOCAL_HEADER: Final = 30
_SKIPPED_DIRECTORIES: Final = ("__MACOSX/",)
_SKIPPED_NAMES: Final = (".DS_Store",)


def is_zip(magic: bytes) -> bool:
    return magic.startswith(ZIP_MAGICS)


def is_tar(magic: bytes) -> bool:
    return magic[257:262] == b"ustar"


@dataclass(frozen=True, slots=True)
class Member:
    """One file in an archive: its bytes by offset (``source``), in order (``open``), or why not."""

    name: str
    size: int
    source: ByteSource | None = None
    open: Callable[[], Readable] | None = None
    problem: str | None = None
    #: The CRC-32 a zip records for a member read by offset, for a reader of all its bytes
    #: to check (``zipfile`` checks those it inflates).
    crc: int | None = None


def _skipped(name: str) -> bool:
    base = name.rsplit("/", 1)[-1]
    return name.startswith(_SKIPPED_DIRECTORIES) or base.startswith("._") or base in _SKIPPED_NAMES


def _too_many(count: int) -> Member:
    return Member(
        name=f"(members after the first {MAX_MEMBERS:,})",
        size=0,
        problem=f"the archive has {count:,} members; those after the first {MAX_MEMBERS:,} "
        "were not inspected",
    )


class Budget:
    """The bytes one archive may unfold into, shared by all its members' streams."""

    def __init__(self, archive_size: int) -> None:
        self.archive_size = archive_size
        self.used = 0

    def spend(self, count: int) -> None:
        self.used += count
        if is_bomb(self.used, self.archive_size):
            raise Refused(
                f"refused: the archive's members together unfold into more than "
                f"{self.used:,} bytes, over {MAX_RATIO} times the archive's {self.archive_size:,}"
            )


class Counted:
    """A member's stream that spends its archive's budget as it is read."""

    def __init__(self, stream: Readable, budget: Budget) -> None:
        self._stream = stream
        self._budget = budget

    def read(self, size: int = -1, /) -> bytes:
        data = self._stream.read(size)
        self._budget.spend(len(data))
        return data


class CrcChecked:
    """A stored zip member read in order, whose CRC-32 is checked at its end as ``zipfile``
    checks an inflated one's, with its words: the bytes are those the archive was made of.
    ISA-L's CRC runs at about 13 GB/s, a few percent of reading a trace's events."""

    def __init__(self, stream: Readable, name: str, crc: int) -> None:
        self._stream = stream
        self._name = name
        self._expected = crc
        self._crc = 0

    def read(self, size: int = -1, /) -> bytes:
        data = self._stream.read(size)
        if data:
            self._crc = isal_zlib.crc32(data, self._crc)
        elif self._crc != self._expected:
            raise zipfile.BadZipFile(f"Bad CRC-32 for file {self._name!r}")
        return data


def _stored_source(source: ByteSource, info: zipfile.ZipInfo) -> ByteSource | None:
    """The bytes of a member stored without compression, straight from the archive."""
    header = fetch(source, info.header_offset, _LOCAL_HEADER)
    if len(header) < _LOCAL_HEADER or not header.startswith(b"PK\x03\x04"):
        return None
    name_length = int.from_bytes(header[26:28], "little")
    extra_length = int.from_bytes(header[28:30], "little")
    start = info.header_offset + _LOCAL_HEADER + name_length + extra_length
    if start + info.compress_size > source.size:
        return None
    return SliceSource(source, start, info.compress_size)


def zip_members(source: ByteSource) -> Iterator[Member]:
    """Each file of a zip archive; a member's stream is valid until the next one is taken."""
    budget = Budget(source.size)
    with zipfile.ZipFile(open_source(source)) as archive:
        infos = [info for info in archive.infolist() if not info.is_dir()]
        for info in infos[:MAX_MEMBERS]:
            name, size = info.filename, info.file_size
            if _skipped(name):
                continue
            if info.flag_bits & 0x1:
                yield Member(name, size, problem="the member is encrypted")
            elif is_bomb(info.file_size, info.compress_size):
                yield Member(name, size, problem=refusal(info.file_size, info.compress_size))
            elif info.compress_type == zipfile.ZIP_STORED:
                stored = _stored_source(source, info)
                problem = None if stored else "its local header is missing or out of place"
                yield Member(name, size, source=stored, problem=problem, crc=info.CRC)
            else:

                def opened(info: zipfile.ZipInfo = info) -> Readable:
                    return Counted(archive.open(info), budget)

                yield Member(name, size, open=opened)
        if len(infos) > MAX_MEMBERS:
            yield _too_many(len(infos))


def tar_members(source: ByteSource) -> Iterator[Member]:
    """Each file of a plain tar archive, as a window onto the archive."""
    with tarfile.open(fileobj=open_source(source), mode="r:") as archive:
        count = 0
        for info in archive:
            if not info.isfile() or _skipped(info.name):
                continue
            count += 1
            if count > MAX_MEMBERS:
                yield _too_many(count)
                return
            if info.issparse():
                yield Member(info.name, info.size, problem="the member is a sparse file")
            else:
                yield Member(
                    info.name, info.size, source=SliceSource(source, info.offset_data, info.size)
                )


def tar_stream_members(stream: Readable) -> Iterator[Member]:
    """Each file of a tar read in order (inside gzip); a member's stream lasts until the next."""
    # Stream mode only ever calls read(); the cast answers typeshed's full file protocol.
    with tarfile.open(fileobj=cast(IO[bytes], stream), mode="r|") as archive:
        count = 0
        for info in archive:
            if not info.isfile() or _skipped(info.name):
                continue
            count += 1
            if count > MAX_MEMBERS:
                yield _too_many(count)
                return

            def opened(info: tarfile.TarInfo = info) -> Readable:
                member = archive.extractfile(info)
                if member is None:
                    raise tarfile.ReadError(f"{info.name} has no data")
                return member

            yield Member(info.name, info.size, open=opened)
