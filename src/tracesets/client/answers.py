"""The answers an upload reads, read without pydantic: the members the client uses, typed
and checked, and the JSON object as the service sent it.

Importing pydantic and building the 34 wire models takes about 150 ms of CPU, half of
``tracesets upload``'s start-up, for a few members of three or four answers. The flows
read these instead; ``Client``'s methods still return the wire models (``model``
validates the answer's JSON with them, as before), and only then is pydantic imported.
``tests/client/test_answers.py`` keeps each reader in step with its wire model.

The protocols (``…Like``) are what the flows need of an answer: a reader and its wire
model both have it, so either can be given (tests build wire models by hand).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final, Protocol, TypeVar

from tracesets.jsontext import JsonNumber

if TYPE_CHECKING:
    from pydantic import BaseModel

    from tracesets.wire import (
        PromotedTraceset,
        Traceset,
        TracesetFile,
        UploadStatus,
        UploadUrlResponse,
    )

M = TypeVar("M", bound="BaseModel")

#: The members of a traceset that hold datetimes, which the wire model reads as such.
DATETIMES: Final = ("createdAt", "updatedAt", "promotedAt")


class Unreadable(ValueError):
    """An answer without a member the client needs, or with one of another type."""


def _member(raw: Mapping[str, Any], name: str, kind: type | tuple[type, ...]) -> Any:
    if name not in raw:
        raise Unreadable(f"{name}: field required")
    value = raw[name]
    if isinstance(value, JsonNumber):
        value = int(value.text) if value.text.lstrip("-").isdigit() else None
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is int):
        raise Unreadable(f"{name}: not {getattr(kind, '__name__', kind)}")
    return value


def _optional(raw: Mapping[str, Any], name: str, kind: type) -> Any:
    if raw.get(name) is None:
        return None
    return _member(raw, name, kind)


def _object(value: Any, name: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise Unreadable(f"{name}: not an object")
    return value


def _objects(raw: Mapping[str, Any], name: str) -> list[Mapping[str, Any]]:
    return [_object(item, name) for item in _member(raw, name, list)]


def _headers(raw: Mapping[str, Any]) -> dict[str, str]:
    headers = _object(_member(raw, "headers", dict), "headers")
    if not all(isinstance(v, str) for v in headers.values()):
        raise Unreadable("headers: not strings")
    return dict(headers)


class PartTargetLike(Protocol):
    @property
    def partNumber(self) -> int: ...  # noqa: N802 (the wire name)
    @property
    def url(self) -> str: ...
    @property
    def size(self) -> int: ...
    @property
    def headers(self) -> dict[str, str]: ...


class UploadTargetLike(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def url(self) -> str | None: ...
    @property
    def headers(self) -> dict[str, str]: ...
    @property
    def partSize(self) -> int | None: ...  # noqa: N802 (the wire name)
    @property
    def parts(self) -> Sequence[PartTargetLike] | None: ...


class FileLike(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def size(self) -> int: ...
    @property
    def sha256(self) -> str | None: ...


@dataclass(frozen=True, slots=True)
class PartTargetAnswer:
    partNumber: int
    url: str
    size: int
    headers: dict[str, str]

    @classmethod
    def read(cls, raw: Mapping[str, Any]) -> PartTargetAnswer:
        return cls(
            _member(raw, "partNumber", int),
            _member(raw, "url", str),
            _member(raw, "size", int),
            _headers(raw),
        )


@dataclass(frozen=True, slots=True)
class UploadTargetAnswer:
    name: str
    url: str | None
    headers: dict[str, str]
    partSize: int | None
    parts: list[PartTargetAnswer] | None
    raw: Mapping[str, Any]

    @classmethod
    def read(cls, raw: Mapping[str, Any]) -> UploadTargetAnswer:
        parts = None if raw.get("parts") is None else _objects(raw, "parts")
        return cls(
            _member(raw, "name", str),
            _optional(raw, "url", str),
            _headers(raw),
            _optional(raw, "partSize", int),
            None if parts is None else [PartTargetAnswer.read(p) for p in parts],
            raw,
        )


@dataclass(frozen=True, slots=True)
class UploadUrlAnswer:
    """upload-url's and add-files' answer."""

    tracesetId: str
    uploads: list[UploadTargetAnswer]
    uploadsNextCursor: str | None
    raw: Mapping[str, Any]

    @classmethod
    def read(cls, raw: Mapping[str, Any]) -> UploadUrlAnswer:
        return cls(
            _member(raw, "tracesetId", str),
            [UploadTargetAnswer.read(u) for u in _objects(raw, "uploads")],
            _optional(raw, "uploadsNextCursor", str),
            raw,
        )


@dataclass(frozen=True, slots=True)
class UploadStatusAnswer:
    """A page of ``GET …/uploads``, or pages joined (``joined``)."""

    tracesetId: str
    status: str
    received: list[str]
    uploads: list[UploadTargetAnswer]
    nextCursor: str | None
    raw: Mapping[str, Any]

    @classmethod
    def read(cls, raw: Mapping[str, Any]) -> UploadStatusAnswer:
        received = _member(raw, "received", list)
        if not all(isinstance(name, str) for name in received):
            raise Unreadable("received: not strings")
        return cls(
            _member(raw, "tracesetId", str),
            _member(raw, "status", str),
            received,
            [UploadTargetAnswer.read(u) for u in _objects(raw, "uploads")],
            _optional(raw, "nextCursor", str),
            raw,
        )

    def joined(self, then: UploadStatusAnswer) -> UploadStatusAnswer:
        """This page and ``then`` as one."""
        cursor = then.nextCursor
        uploads = [*self.uploads, *then.uploads]
        received = [*self.received, *then.received]
        raw = {
            **then.raw,
            "received": received,
            "uploads": [u.raw for u in uploads],
            "nextCursor": cursor,
        }
        return UploadStatusAnswer(then.tracesetId, then.status, received, uploads, cursor, raw)

    def whole(self) -> UploadStatusAnswer:
        """These pages as every page: no cursor past them."""
        raw = {**self.raw, "nextCursor": None}
        return replace(self, nextCursor=None, raw=raw)


@dataclass(frozen=True, slots=True)
class WhoamiAnswer:
    workspace: str
    scopes: list[str]
    #: Files of more bytes than this are sent in parts, each part's SHA-256 declared
    #: (``files.hash_file``); None: no file is. 0 from a service that does not say: any
    #: file S3 would take in parts, as before the service said.
    multipartThreshold: int | None
    raw: Mapping[str, Any]

    @classmethod
    def read(cls, raw: Mapping[str, Any]) -> WhoamiAnswer:
        threshold = _optional(raw, "multipartThreshold", int) if "multipartThreshold" in raw else 0
        return cls(_member(raw, "workspace", str), _member(raw, "scopes", list), threshold, raw)


@dataclass(frozen=True, slots=True)
class FileAnswer:
    name: str
    size: int
    sha256: str | None
    raw: Mapping[str, Any]

    @classmethod
    def read(cls, raw: Mapping[str, Any]) -> FileAnswer:
        return cls(
            _member(raw, "name", str),
            _member(raw, "size", int),
            _optional(raw, "sha256", str),
            raw,
        )


@dataclass(frozen=True, slots=True)
class FileListAnswer:
    items: list[FileAnswer]
    nextCursor: str | None

    @classmethod
    def read(cls, raw: Mapping[str, Any]) -> FileListAnswer:
        return cls(
            [FileAnswer.read(f) for f in _objects(raw, "items")],
            _optional(raw, "nextCursor", str),
        )


@dataclass(frozen=True, slots=True)
class TracesetAnswer:
    """A traceset (get, complete, promote): what a flow and the command's report read."""

    id: str
    name: str
    status: str
    fileCount: int
    fileBytes: int
    rankCountDerived: int | None
    files: list[FileAnswer]
    filesNextCursor: str | None
    inspection_status: str | None
    raw: Mapping[str, Any]

    @classmethod
    def read(cls, raw: Mapping[str, Any]) -> TracesetAnswer:
        inspection = raw.get("inspection")
        status = None if inspection is None else _object(inspection, "inspection").get("status")
        for name in DATETIMES:
            _optional(raw, name, str)
        return cls(
            _member(raw, "id", str),
            _member(raw, "name", str),
            _member(raw, "status", str),
            _member(raw, "fileCount", int),
            _member(raw, "fileBytes", int),
            _optional(raw, "rankCountDerived", int),
            [FileAnswer.read(f) for f in _objects(raw, "files")],
            _optional(raw, "filesNextCursor", str),
            status if isinstance(status, str) else None,
            raw,
        )

    def with_files(self, files: list[FileAnswer]) -> TracesetAnswer:
        """The traceset with ``files`` as every one of its files (no cursor past them)."""
        raw = {**self.raw, "files": [f.raw for f in files], "filesNextCursor": None}
        return replace(self, files=files, filesNextCursor=None, raw=raw)

    def printed(self) -> dict[str, Any]:
        """The object the command line prints: the wire model's dump, datetimes as
        datetimes (so ``jsontext`` writes them as it writes a model's)."""
        return {
            **self.raw,
            **{
                name: None if self.raw.get(name) is None else datetime.fromisoformat(self.raw[name])
                for name in DATETIMES
                if name in self.raw
            },
        }


def model(kind: type[M], answer: Any) -> M:
    """``answer`` as the wire model ``kind``: validated from the JSON the service sent
    (a wire model given, as tests do, is returned as it is)."""
    if isinstance(answer, kind):
        return answer
    return kind.model_validate(answer.raw)


# The wire models the public methods return, imported (with pydantic) on first use.


def as_traceset(answer: TracesetAnswer | Traceset) -> Traceset:
    from tracesets.wire import Traceset

    return model(Traceset, answer)


def as_promoted(answer: TracesetAnswer | PromotedTraceset) -> PromotedTraceset:
    from tracesets.wire import PromotedTraceset

    return model(PromotedTraceset, answer)


def as_upload_urls(answer: UploadUrlAnswer | UploadUrlResponse) -> UploadUrlResponse:
    from tracesets.wire import UploadUrlResponse

    return model(UploadUrlResponse, answer)


def as_upload_status(answer: UploadStatusAnswer | UploadStatus) -> UploadStatus:
    from tracesets.wire import UploadStatus

    return model(UploadStatus, answer)


def as_file(answer: FileAnswer | TracesetFile) -> TracesetFile:
    from tracesets.wire import TracesetFile

    return model(TracesetFile, answer)
