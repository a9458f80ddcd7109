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
from tracesets.filenames import folders_of, same_name_key

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
    """Where ``name`` goes under ``dest``, keeping its relative path; never outside it (a
    drive such as ``C:`` leaves it on Windows, so that is checked on the joined path)."""
    relative = PurePosixPath(name)
    folder = Path(dest)
    place = folder.joinpath(*relative.parts)
    if relative.is_absolute() or ".." in relative.parts or not place.is_relative_to(folder):
        raise ClientError(f"Refusing to save {name!r} outside {dest}", sent=False)
    return place


def places(dest: PathLike, files: Iterable[F]) -> list[tuple[F, Path]]:
    """Where each file goes under ``dest``, every name checked before any byte is fetched.

    Tracesets stored before names had one spelling each may hold two names of one path
    (``a/b`` and ``a//b``, ``a/./b``; ``Rank0.json`` and ``rank0.json`` on macOS and
    Windows) or a file named as another's folder (``x`` beside ``x/y``): saved together,
    one would overwrite the other or fail halfway, so such a download is refused, naming
    both; each can be downloaded alone, by name, into a folder of its own.
    """
    chosen = [(file, inside(dest, file.name)) for file in files]
    seen: dict[str, str] = {}  # the key of a place under dest → the name saved there
    folders: dict[str, str] = {}  # the key of a folder made under dest → a name in it
    for file, place in chosen:
        key = same_name_key("/".join(place.relative_to(dest).parts))
        within = folders_of(key)
        other = seen.get(key) or folders.get(key)
        other = other or next((seen[f] for f in within if f in seen), None)
        if other is not None:
            raise ClientError(
                f"{other!r} and {file.name!r} would be saved as one path in {dest}: "
                "download each alone (by name) into a folder of its own",
                sent=False,
            )
        seen[key] = file.name
        for folder in within:
            folders.setdefault(folder, file.name)
    return chosen


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
