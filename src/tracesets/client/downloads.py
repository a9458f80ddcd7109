"""A whole traceset's download: where each file goes, which are already there, the summary.

A file already at its place with the traceset's size and sha256 is not fetched again, so
an interrupted download resumes where it stopped; any other file there is replaced, only
once the new bytes are whole and checked (``Download`` writes beside it, then renames).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TypeVar

from tracesets.client.answers import FileLike
from tracesets.client.errors import ClientError
from tracesets.client.files import CHUNK, PathLike
from tracesets.client.progress import ProgressCallback, ProgressCounter

F = TypeVar("F", bound=FileLike)


@dataclass(frozen=True, slots=True)
class DownloadSummary:
    """What a traceset's download did: files fetched and their bytes, files already there."""

    downloaded: int
    skipped: int
    bytes: int
    seconds: float
    dest: Path


def inside(dest: PathLike, name: str) -> Path:
    """Where ``name`` goes under ``dest``, keeping its relative path; never outside it."""
    relative = PurePosixPath(name)
    if relative.is_absolute() or ".." in relative.parts:
        raise ClientError(f"Refusing to save {name!r} outside {dest}", sent=False)
    return Path(dest).joinpath(*relative.parts)


def choose(files: Iterable[F], names: Iterable[str] | None) -> list[F]:
    """The files asked for (all without ``names``), largest first so none finishes alone."""
    every = list(files)
    wanted = set(names or ())
    if wanted:
        missing = sorted(wanted - {f.name for f in every})
        if missing:
            raise ClientError(f"The traceset has no file {missing[0]!r}", sent=False)
        every = [f for f in every if f.name in wanted]
    return sorted(every, key=lambda f: f.size, reverse=True)


def already_there(path: Path, file: FileLike) -> bool:
    """``path`` holds exactly ``file``: its size, then (only if that matches) its sha256."""
    try:
        if not path.is_file() or path.stat().st_size != file.size:
            return False
        if file.sha256 is None:
            return False  # nothing to check it against: fetch it
        digest = hashlib.sha256()
        with path.open("rb", buffering=0) as source:
            while chunk := source.read(CHUNK):
                digest.update(chunk)
    except OSError:
        return False
    return digest.hexdigest() == file.sha256


def clear(path: Path, file: FileLike) -> bool:
    """``True`` if ``path`` already holds ``file``; otherwise whatever is there is removed,
    so a wrong or partial file never stays under the name even if the fetch then fails."""
    if already_there(path, file):
        return True
    if path.is_file() or path.is_symlink():
        path.unlink(missing_ok=True)
    return False


def adding(counter: ProgressCounter) -> ProgressCallback:
    """One file's progress, added to the whole download's (a retry gives its bytes back)."""
    last = 0

    def moved(done: int, total: int) -> None:
        nonlocal last
        counter.add(done - last)
        last = done

    return moved


def tally(outcomes: Iterable[int | None], seconds: float, dest: PathLike) -> DownloadSummary:
    """``outcomes``: each file's bytes fetched, or ``None`` when it was already there."""
    done = list(outcomes)
    fetched = [b for b in done if b is not None]
    return DownloadSummary(
        downloaded=len(fetched),
        skipped=len(done) - len(fetched),
        bytes=sum(fetched),
        seconds=seconds,
        dest=Path(dest),
    )
