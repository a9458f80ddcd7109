"""Local files to upload: which ones, under which names, their digests, and their PUTs.

A directory stands for every file under it, named by its path relative to the directory
with ``/`` between folders; a file stands for itself, named by its file name. Supporting
paths that lie inside a primary directory keep their name there and become supporting.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import stat
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, BinaryIO, Final

from tracesets.client.answers import TracesetAnswer, UploadStatusAnswer, UploadTargetLike
from tracesets.client.errors import ClientError
from tracesets.uploadrequest import Role
from tracesets.vocabulary import PLANNED_PARTS_MAX

CHUNK: Final = 1024 * 1024
#: Files above S3's least part size are declared in parts of this size (or larger, for at
#: most 1,000 parts): a store that takes them in parts then checks each part as it arrives
#: and the whole file at ``complete`` without reading it back.
PART_SIZE: Final = 64 * CHUNK
MIN_PART_SIZE: Final = 5 * CHUNK

PathLike = str | os.PathLike[str]


@dataclass(frozen=True, slots=True)
class LocalFile:
    path: Path
    name: str
    size: int
    role: Role
    sha256: str | None = None
    part_sha256: tuple[str, ...] | None = None

    def spec(self) -> dict[str, Any]:
        """The file's entry in an upload-url request."""
        entry: dict[str, Any] = {"name": self.name, "size": self.size, "role": self.role}
        if self.sha256 is not None:
            entry["sha256"] = self.sha256
        if self.part_sha256 is not None:
            entry["partSize"] = part_size_for(self.size)
            entry["partSha256"] = list(self.part_sha256)
        return entry


def part_size_for(size: int) -> int:
    """``PART_SIZE``, or more (whole MiB) when the file would need more than 1,000 parts."""
    return max(PART_SIZE, -(-size // (PLANNED_PARTS_MAX * CHUNK)) * CHUNK)


def undigested(file: LocalFile) -> LocalFile:
    """``file`` as known before it is read: its name, size and role."""
    return replace(file, sha256=None, part_sha256=None)


def digest_shaped(file: LocalFile) -> LocalFile:
    """``file`` with stand-in digests of the length and number ``hash_file`` gives it:
    its entry in a request is as long as it will be, before the file is read."""
    stand_in = "0" * 64
    if file.size <= MIN_PART_SIZE:
        return replace(file, sha256=stand_in)
    parts = -(-file.size // part_size_for(file.size))
    return replace(file, sha256=stand_in, part_sha256=(stand_in,) * parts)


@dataclass(frozen=True, slots=True)
class Put:
    """One PUT: a byte range of a local file to a signed URL, with the headers to send."""

    file: LocalFile
    url: str
    headers: dict[str, str]
    offset: int
    length: int
    label: str


def already_stored(put: Put, status: int) -> bool:
    """A conditional PUT (``If-None-Match: *``) refused because the object exists: a
    retried PUT whose first try arrived. ``complete`` checks that those are the right
    bytes."""
    conditional = any(k.lower() == "if-none-match" and v == "*" for k, v in put.headers.items())
    return status == 412 and conditional


def as_paths(paths: PathLike | Iterable[PathLike]) -> list[Path]:
    if isinstance(paths, str | os.PathLike):
        return [Path(paths)]
    return [Path(p) for p in paths]


def _walk(root: Path) -> Iterator[tuple[Path, str, str, int]]:
    """Each file ``root`` stands for, in name order: its path, its name, where it really
    is (a file given twice is sent once) and its size.

    One ``lstat`` a file that is no link: a job's folder holds a trace per rank, and
    resolving each path (an ``lstat`` per folder above it) then asking its size took
    longer than reading it. The folders walked are real ones (links to folders are not
    followed), so a file in them really is in the root's real folder under its name."""
    if root.is_file():
        yield root, root.name, str(root.resolve()), root.stat().st_size
        return
    if not root.is_dir():
        raise ClientError(f"{root}: no such file or directory", sent=False)
    real_root = str(root.resolve())
    found = []
    for folder, dirs, names in os.walk(root, onerror=_unreadable):
        dirs.sort()
        under = os.path.relpath(folder, root).replace(os.sep, "/")
        prefix = "" if under == "." else f"{under}/"
        for name in names:
            path = Path(folder, name)
            located = _regular(path, f"{real_root}/{prefix}{name}")
            if located is not None:  # skips sockets, fifos and broken links
                found.append((path, prefix + name, *located))
    yield from sorted(found, key=lambda item: item[1])


def _regular(path: Path, real: str) -> tuple[str, int] | None:
    """Where a regular file (or a link to one) really is, and its size; None for anything
    else. ``real``: where it is if it is no link."""
    try:
        status = os.lstat(path)
        if stat.S_ISLNK(status.st_mode):
            status, real = os.stat(path), str(path.resolve())
    except OSError:
        return None
    return (real, status.st_size) if stat.S_ISREG(status.st_mode) else None


def _unreadable(error: OSError) -> None:
    raise ClientError(f"{error.filename}: {error.strerror}", sent=False)


def collect(
    paths: PathLike | Iterable[PathLike], supporting: PathLike | Iterable[PathLike] = ()
) -> list[LocalFile]:
    """The files to upload, primary first, in name order within each path given."""
    chosen: dict[str, LocalFile] = {}
    groups: list[tuple[Role, list[Path]]] = [
        ("primary", as_paths(paths)),
        ("supporting", as_paths(supporting)),
    ]
    for role, roots in groups:
        for root in roots:
            for path, name, real, size in _walk(root):
                earlier = chosen.get(real)
                if earlier is not None:
                    chosen[real] = replace(earlier, role=role)
                else:
                    chosen[real] = LocalFile(path, name, size, role)
    return list(chosen.values())


def hash_file(
    file: LocalFile, on_bytes: Callable[[int], None] | None = None, parts_above: int | None = 0
) -> LocalFile:
    """``file`` with its sha256 and, above ``parts_above`` bytes and S3's least part size,
    each part's, in one read. ``parts_above`` is the service's multipart threshold (None:
    it takes no file in parts): each part's digest is a second SHA-256 of the same bytes,
    twice the CPU, spent only where the store checks it.

    Part sizes are whole MiB, so each read chunk lies in one part.
    """
    digest = hashlib.sha256()
    in_parts = parts_above is not None and file.size > max(MIN_PART_SIZE, parts_above)
    part_size = part_size_for(file.size)
    parts: list[str] = []
    part = hashlib.sha256()
    done = 0
    try:
        with file.path.open("rb", buffering=0) as source:
            while chunk := source.read(CHUNK):
                digest.update(chunk)
                if in_parts and file.size > part_size:
                    part.update(chunk)
                    done += len(chunk)
                    if done % part_size == 0 or done >= file.size:
                        parts.append(part.hexdigest())
                        part = hashlib.sha256()
                if on_bytes is not None:
                    on_bytes(len(chunk))
    except OSError as exc:
        raise ClientError(f"{file.path}: {exc.strerror or exc}", sent=False) from None
    whole = digest.hexdigest()
    if not in_parts:
        return replace(file, sha256=whole)
    # One part: its digest is the file's.
    return replace(file, sha256=whole, part_sha256=tuple(parts) if parts else (whole,))


def read_range(path: Path, offset: int, length: int) -> Iterator[bytes]:
    """The bytes of ``path`` from ``offset``, ``length`` of them, a chunk at a time."""
    with path.open("rb", buffering=0) as source:
        source.seek(offset)
        left = length
        while left:
            chunk = source.read(min(CHUNK, left))
            if not chunk:
                raise ClientError(f"{path} became shorter while it was being uploaded", sent=False)
            left -= len(chunk)
            yield chunk


def plan(files: Sequence[LocalFile], uploads: Sequence[UploadTargetLike]) -> list[Put]:
    """Every PUT the upload needs: one per file, or one per part of a multipart upload."""
    by_name = {f.name: f for f in files}
    puts: list[Put] = []
    for target in uploads:
        file = by_name.get(target.name)
        if file is None:
            raise ClientError(
                f"The service answered an upload URL for {target.name!r}, not asked for"
            )
        if target.parts:
            part_size = target.partSize or 0
            for part in target.parts:
                offset = (part.partNumber - 1) * part_size
                if offset + part.size > file.size:
                    raise ClientError(f"Part {part.partNumber} of {file.name} ends past its size")
                puts.append(
                    Put(
                        file,
                        part.url,
                        part.headers,
                        offset,
                        part.size,
                        f"{file.name} part {part.partNumber}",
                    )
                )
        elif target.url is not None:
            puts.append(Put(file, target.url, target.headers, 0, file.size, file.name))
        else:
            raise ClientError(f"The service answered no upload URL for {target.name!r}")
    # Largest first, so one big file does not start last and finish alone.
    puts.sort(key=lambda put: put.length, reverse=True)
    return puts


def still_to_send(
    files: Sequence[LocalFile], traceset: TracesetAnswer, status: UploadStatusAnswer
) -> list[LocalFile]:
    """The local files an interrupted upload still needs, each the size the traceset declared."""
    local = {f.name: f for f in files}
    declared = {f.name: f for f in traceset.files}
    wanted = []
    for target in status.uploads:
        file = local.get(target.name)
        if file is None:
            raise ClientError(
                f"{target.name} has not arrived, and is not among the files given", sent=False
            )
        if target.name in declared and file.size != declared[target.name].size:
            raise ClientError(
                f"{file.path} holds {file.size:,} bytes; the traceset declared "
                f"{declared[target.name].size:,} for {file.name}",
                sent=False,
            )
        wanted.append(file)
    return wanted


def check_digests(files: Sequence[LocalFile], traceset: TracesetAnswer) -> None:
    declared = {f.name: f.sha256 for f in traceset.files}
    for file in files:
        expected = declared.get(file.name)
        if expected is not None and file.sha256 != expected:
            raise ClientError(
                f"{file.path} is not the file the traceset declared for {file.name}: its sha256 "
                f"is {file.sha256}, not {expected}",
                sent=False,
            )


def total_size(files: Iterable[LocalFile]) -> int:
    return sum(f.size for f in files)


def download_target(dest: PathLike, name: str) -> Path:
    """Where a download goes: into ``dest`` if it is a folder (by file name), else ``dest``."""
    path = Path(dest)
    if path.is_dir():
        return path / name.rsplit("/", 1)[-1]
    return path


#: Windows would translate line ends of a file opened without it.
_BINARY: Final = getattr(os, "O_BINARY", 0)


def _partial_beside(target: Path) -> tuple[Path, BinaryIO]:
    """A new file beside ``target``, its own: a random name, created only if absent
    (``O_EXCL``), so two downloads to one target, in one process or several, never write
    into one partial file. Made as ``open`` makes files (the umask's mode), unlike
    ``tempfile``'s, which only their owner may read once renamed into place."""
    while True:
        partial = target.with_name(f".{target.name}.{secrets.token_hex(8)}.part")
        try:
            out = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _BINARY, 0o666)
        except FileExistsError:
            continue
        return partial, os.fdopen(out, "wb")


class Download:
    """Bytes written beside their target, checked, then renamed into place: never half a file."""

    def __init__(self, target: Path, sha256: str | None) -> None:
        self.target = target
        self.expected = sha256
        self.digest = hashlib.sha256()
        self.size = 0
        target.parent.mkdir(parents=True, exist_ok=True)
        self.partial, self._out = _partial_beside(target)

    def write(self, chunk: bytes) -> None:
        self._out.write(chunk)
        self.digest.update(chunk)
        self.size += len(chunk)

    def finish(self) -> Path:
        self._out.close()
        got = self.digest.hexdigest()
        if self.expected is not None and got != self.expected:
            self.discard()
            raise ClientError(
                f"{self.target.name}: the bytes received have sha256 {got}, "
                f"not the traceset's {self.expected}"
            )
        os.replace(self.partial, self.target)
        return self.target

    def discard(self) -> None:
        self._out.close()
        self.partial.unlink(missing_ok=True)
