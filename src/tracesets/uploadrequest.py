"""The upload-url request: read a parsed body, report every problem at once.

Pure, like the workload rules it calls. The HTTP layer parses the body strictly
(``jsontext.loads``) and hands the result here; the client and the CLI call the
same function before they send anything.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Final, Literal

from tracesets import workload
from tracesets.filenames import (
    file_and_folder,
    file_name_problem,
    folders_of,
    is_unicode,
    repeated_name,
    same_name_key,
)
from tracesets.jsontext import JsonValue
from tracesets.problems import InvalidRequest, Problem
from tracesets.vocabulary import MAX_FILES_PER_REQUEST
from tracesets.workload import show

MAX_NAME_CHARS: Final = 256
MAX_DESCRIPTION_CHARS: Final = 16_384
MAX_FILE_SIZE: Final = 5 * 1024**4  # 5 TiB
ROLES: Final = ("primary", "supporting")
_SHA256: Final = re.compile(r"[0-9a-f]{64}")
_MEMBERS: Final = frozenset({"name", "description", "files", "workloadMetadata", "baselineId"})
#: A traceset's id: 32 lowercase hex digits.
_TRACESET_ID: Final = re.compile(r"[0-9a-f]{32}")
_FILE_MEMBERS: Final = frozenset({"name", "size", "role", "sha256", "partSize", "partSha256"})
MIN_PART_SIZE: Final = 5 * 1024**2  # S3's least part (but the last)
MAX_PART_SIZE: Final = 5 * 1024**3  # S3's largest part
MAX_PARTS: Final = 10_000  # S3's most parts of one upload
_ADD_MEMBERS: Final = frozenset({"files"})

Role = Literal["primary", "supporting"]


@dataclass(frozen=True, slots=True)
class PartDigests:
    """A file's SHA-256 part by part, as its client declared them for the part size it chose.

    A store that uploads in parts signs each part's digest into that part's URL, so the
    store refuses other bytes, and checks the whole file from those digests at ``complete``
    without reading it back.
    """

    part_size: int
    sha256: tuple[str, ...]  # 64 lowercase hex digits each, part 1 first


@dataclass(frozen=True, slots=True)
class FileSpec:
    name: str
    size: int
    role: Role
    sha256: str | None
    parts: PartDigests | None = None


@dataclass(frozen=True, slots=True)
class UploadRequest:
    """A request that passed every check, with what the rules derived from it."""

    name: str
    description: str | None
    files: list[FileSpec]
    workload_metadata: bytes | None  # compact JSON text, stored and returned as is
    rank_count: int | None
    baseline_id: str | None = None  # the traceset to compare with (the service checks it)


def _whole(value: JsonValue) -> bool:
    return type(value) is int


def _check_file(index: int, entry: JsonValue, problems: list[Problem]) -> FileSpec | None:
    at = f"files[{index}]"
    if not isinstance(entry, dict):
        problems.append(Problem(at, entry, f"{at} must be an object; got {show(entry)}"))
        return None
    before = len(problems)
    # In the order given, so the first problem, and so ``detail``, is the same every run.
    for unknown in [key for key in entry if key not in _FILE_MEMBERS]:
        problems.append(
            Problem(f"{at}.{unknown}", entry[unknown], f"{at}.{unknown} is not a member of a file")
        )
    name: Any = entry.get("name")
    size: Any = entry.get("size")
    role: Any = entry.get("role")
    sha: Any = entry.get("sha256")
    if not isinstance(name, str):
        problems.append(
            Problem(f"{at}.name", name, f"{at}.name must be a string; got {show(name)}")
        )
    elif (why := file_name_problem(name)) is not None:
        problems.append(Problem(f"{at}.name", name, f"{at}.name {why}"))
    if not (_whole(size) and 0 <= size <= MAX_FILE_SIZE):
        problems.append(
            Problem(
                f"{at}.size",
                size,
                f"{at}.size must be a whole number of bytes from 0 to 5 TiB; got {show(size)}",
            )
        )
    if role not in ROLES:
        problems.append(
            Problem(
                f"{at}.role", role, f'{at}.role must be "primary" or "supporting"; got {show(role)}'
            )
        )
    if sha is not None and not (isinstance(sha, str) and _SHA256.fullmatch(sha)):
        problems.append(
            Problem(
                f"{at}.sha256",
                sha,
                f"{at}.sha256 must be 64 lowercase hexadecimal digits; got {show(sha)}",
            )
        )
    parts = _check_parts(at, entry, size, sha, problems)
    if len(problems) > before:
        return None
    return FileSpec(name, size, role, sha, parts)


def _check_parts(
    at: str, entry: dict[str, JsonValue], size: Any, sha: Any, problems: list[Problem]
) -> PartDigests | None:
    """``partSize`` and ``partSha256``: the SHA-256 of each part, for a store that takes the
    file in parts (S3) and checks it from these without reading it back."""
    if "partSize" not in entry and "partSha256" not in entry:
        return None
    part_size: Any = entry.get("partSize")
    digests: Any = entry.get("partSha256")
    before = len(problems)
    if not (_whole(part_size) and MIN_PART_SIZE <= part_size <= MAX_PART_SIZE):
        problems.append(
            Problem(
                f"{at}.partSize",
                part_size,
                f"{at}.partSize must be a whole number of bytes from 5 MiB to 5 GiB, given "
                f"with partSha256; got {show(part_size)}",
            )
        )
    if sha is None:
        problems.append(Problem(f"{at}.sha256", sha, f"{at}.sha256 must be given with partSha256"))
    if not (
        isinstance(digests, list)
        and all(isinstance(d, str) and _SHA256.fullmatch(d) for d in digests)
    ):
        problems.append(
            Problem(
                f"{at}.partSha256",
                digests,
                f"{at}.partSha256 must be an array of 64 lowercase hexadecimal digits, one "
                f"per part; got {show(digests)}",
            )
        )
    elif len(problems) == before and _whole(size):
        count = max(1, -(-size // part_size))
        if count > MAX_PARTS or len(digests) != count:
            problems.append(
                Problem(
                    f"{at}.partSha256",
                    len(digests),
                    f"{at}.partSha256 must hold one digest per part of {part_size:,} bytes: "
                    f"{count:,} (at most {MAX_PARTS:,}); got {len(digests):,}",
                )
            )
    if len(problems) > before or not _whole(size):
        return None
    return PartDigests(part_size, tuple(digests))


def _check_files(files: JsonValue, problems: list[Problem], max_files: int) -> list[FileSpec]:
    if not isinstance(files, list):
        problems.append(
            Problem("files", files, f"files must be an array of files; got {show(files)}")
        )
        return []
    if not 1 <= len(files) <= max_files:
        problems.append(
            Problem(
                "files", len(files), f"files must list 1 to {max_files:,} files; got {len(files):,}"
            )
        )
        return []
    specs: list[FileSpec] = []
    seen: dict[str, tuple[int, str]] = {}  # same_name_key → the first entry with it
    folders: dict[str, tuple[int, str]] = {}  # a folder's key → the first entry in it
    for index, entry in enumerate(files):
        spec = _check_file(index, entry, problems)
        # A repeated name is reported even when the entry is refused for its size or role.
        name = entry.get("name") if isinstance(entry, dict) else None
        if isinstance(name, str) and (spec is not None or file_name_problem(name) is None):
            key = same_name_key(name)
            within = folders_of(key)
            why = None
            if key in seen:
                why = repeated_name(index, name, *seen[key])
            elif key in folders:
                why = file_and_folder(f'files[{index}].name "{name}"', *folders[key])
            elif (file := next((seen[f] for f in within if f in seen), None)) is not None:
                why = file_and_folder(f'files[{file[0]}].name "{file[1]}"', index, name)
            if why is not None:
                problems.append(Problem(f"files[{index}].name", name, why))
            else:
                seen[key] = (index, name)
                for folder in within:
                    folders.setdefault(folder, (index, name))
        if spec is not None:
            specs.append(spec)
    return specs


def _has_primary(files: JsonValue) -> bool:
    # Decided from the raw entries, so a file with a bad size still counts as primary
    # and the rank-count rule is reported along with the bad size.
    return isinstance(files, list) and any(
        isinstance(entry, dict) and entry.get("role") == "primary" for entry in files
    )


def read_upload_request(
    body: JsonValue,
    *,
    max_files: int = MAX_FILES_PER_REQUEST,
    max_metadata_bytes: int = workload.MAX_SERIALIZED_BYTES,
) -> UploadRequest:
    """Check an upload-url body; raise InvalidRequest listing every problem found.

    ``max_files``: the most ``files`` it may list; the service's is one request's, a
    client checking a whole upload before it declares it in batches passes the traceset's.
    """
    if not isinstance(body, dict):
        raise InvalidRequest.of([Problem("", body, "The request body must be a JSON object")])
    problems: list[Problem] = []
    for unknown in [key for key in body if key not in _MEMBERS]:
        problems.append(
            Problem(unknown, body[unknown], f"{unknown} is not a member of an upload request")
        )

    name = body.get("name")
    if not (isinstance(name, str) and 1 <= len(name) <= MAX_NAME_CHARS and is_unicode(name)):
        problems.append(
            Problem(
                "name",
                name,
                f"name must be a string of 1 to {MAX_NAME_CHARS} characters; got {show(name)}",
            )
        )
    elif "\x00" in name:  # PostgreSQL cannot store it, so no backend does
        problems.append(Problem("name", name, "name must not contain a NUL character"))
    description = body.get("description")
    if description is not None and not (
        isinstance(description, str)
        and len(description) <= MAX_DESCRIPTION_CHARS
        and is_unicode(description)
    ):
        problems.append(
            Problem(
                "description",
                description,
                f"description must be a string of at most {MAX_DESCRIPTION_CHARS:,} characters, or null",
            )
        )
    elif description is not None and "\x00" in description:
        problems.append(
            Problem("description", description, "description must not contain a NUL character")
        )
    files = _check_files(body.get("files"), problems, max_files)
    metadata = workload.check_upload_metadata(
        body.get("workloadMetadata"),
        has_primary_files=_has_primary(body.get("files")),
        max_bytes=max_metadata_bytes,
    )
    problems.extend(metadata.problems)
    baseline_id = body.get("baselineId")
    if baseline_id is not None and not (
        isinstance(baseline_id, str) and _TRACESET_ID.fullmatch(baseline_id)
    ):
        problems.append(
            Problem(
                "baselineId",
                baseline_id,
                f"baselineId must be a traceset's id (32 lowercase hex digits), or null; "
                f"got {show(baseline_id)}",
            )
        )
    if problems:
        raise InvalidRequest.of(problems)
    assert isinstance(name, str)
    return UploadRequest(
        name,
        description,
        files,
        metadata.serialized,
        metadata.rank_count,
        baseline_id if isinstance(baseline_id, str) else None,
    )


def read_file_additions(
    body: JsonValue, *, max_files: int = MAX_FILES_PER_REQUEST
) -> list[FileSpec]:
    """Check an add-files body (``{"files": [...]}``) by upload-url's rules for ``files``;
    raise InvalidRequest listing every problem found. Names already in the traceset are
    the service's to compare: only it knows them."""
    if not isinstance(body, dict):
        raise InvalidRequest.of([Problem("", body, "The request body must be a JSON object")])
    problems = [
        Problem(unknown, body[unknown], f"{unknown} is not a member of an add-files request")
        for unknown in body
        if unknown not in _ADD_MEMBERS
    ]
    files = _check_files(body.get("files"), problems, max_files)
    if problems:
        raise InvalidRequest.of(problems)
    return files
