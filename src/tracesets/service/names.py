"""Files added to a traceset against the names it holds: one name, one file, on any disk.

Within one request the pure rules (``uploadrequest``) compare the names; against the
traceset's stored files only the service can, under the traceset's lock. A name whose
key (``same_name_key``: NFC, case-folded) is a stored file's, spelled otherwise, or a
name that is a stored file's folder or lies in a stored file, is a name already declared
differently: ``409``, as the contract answers for one declared with another size.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from sqlalchemy import Connection

from tracesets.db import file_rows
from tracesets.filenames import folders_of, same_name_key
from tracesets.problems import Conflict, Problem
from tracesets.records import StoredFile
from tracesets.uploadrequest import FileSpec


def stored_alike(conn: Connection, seq: int, specs: Sequence[FileSpec]) -> dict[str, StoredFile]:
    """The traceset's files each of ``specs`` names exactly, by name; raise Conflict for
    each that names a stored file otherwise, or its folder, or a file it lies in."""
    keys = [same_name_key(spec.name) for spec in specs]
    within = [folders_of(key) for key in keys]
    asked = sorted({*keys, *(folder for folders in within for folder in folders)})
    named, keyed = file_rows.files_named(
        conn, seq=seq, names=[spec.name for spec in specs], keys=asked
    )
    # A new name can be a folder only of stored files, and only if none has its key.
    holding = file_rows.files_in_folders(
        conn, seq=seq, folders=[key for key in keys if key not in keyed]
    )
    problems = [
        problem
        for index, (spec, key, folders) in enumerate(zip(specs, keys, within, strict=True))
        if (problem := _clash(index, spec, key, folders, named, keyed, holding)) is not None
    ]
    if problems:
        raise Conflict.of(problems)
    return named


def _clash(
    index: int,
    spec: FileSpec,
    key: str,
    folders: list[str],
    named: Mapping[str, StoredFile],
    keyed: Mapping[str, StoredFile],
    holding: Mapping[str, str],
) -> Problem | None:
    at = f'files[{index}].name "{spec.name}"'
    why = None
    if (stored := named.get(spec.name)) is not None:
        if (stored.size, stored.role, stored.sha256_declared) != (
            spec.size,
            spec.role,
            spec.sha256,
        ):
            why = f"{at} is already in this traceset with another size, role or sha256"
    elif (stored := keyed.get(key)) is not None:
        why = (
            f'{at} is the same name as "{stored.name}", already in this traceset, once '
            "Unicode-normalized (NFC) and case-folded: the two would be one file on macOS "
            "and Windows"
        )
    elif key in holding:
        why = (
            f'{at} would be a file and the folder of "{holding[key]}", already in this '
            "traceset: a name cannot be both"
        )
    elif (file := next((keyed[f] for f in folders if f in keyed), None)) is not None:
        why = (
            f'{at} would lie in "{file.name}", already in this traceset as a file: a name '
            "cannot be both a file and a folder"
        )
    if why is None:
        return None
    return Problem(f"files[{index}].name", spec.name, why)
