"""Problems and the one error tree every layer raises.

The rules collect every broken rule as a ``Problem`` (member path, value given,
message) rather than stopping at the first, so one answer tells the user all that
is wrong. Each error carries its HTTP status, so the HTTP layer renders all of
them in one handler and the CLI maps them to one exit code.

    TracesetsError
    ├── InvalidRequest      400  the request breaks a rule; lists every problem
    ├── Unauthorized        401  no token, or a token the service does not know
    ├── Forbidden           403  a signed URL that is altered, expired or for another file
    ├── NotFound            404  no such traceset (or another workspace's)
    ├── Conflict            409  the traceset is not in a state that allows this
    ├── Unprocessable       422  an Idempotency-Key reused with another request body
    ├── RequestTimeout      408  the request body stopped arriving
    ├── PayloadTooLarge     413  the request body is over the limit
    ├── TooManyRequests     429  the token's request rate is over the limit (Retry-After)
    ├── HeadersTooLarge     431  a request's line and headers are over the limit
    └── ServiceUnavailable  503  the service is receiving all it can at once (Retry-After)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Self


@dataclass(frozen=True, slots=True)
class Problem:
    """One broken rule: where (dotted member path), what was given, and why it is refused."""

    member: str
    value: Any
    message: str


@dataclass
class TracesetsError(Exception):
    """Base of every refusal; ``detail`` is the first problem's message."""

    detail: str
    problems: list[Problem] = field(default_factory=list)

    status: ClassVar[int] = 500
    title: ClassVar[str] = "Internal error"
    slug: ClassVar[str] = "internal-error"

    def __str__(self) -> str:
        return self.detail

    @classmethod
    def of(cls, problems: list[Problem]) -> Self:
        return cls(problems[0].message, list(problems))


class InvalidRequest(TracesetsError):
    status = 400
    title = "Invalid request"
    slug = "invalid-request"


class Unauthorized(TracesetsError):
    status = 401
    title = "Unauthorized"
    slug = "unauthorized"


class Forbidden(TracesetsError):
    status = 403
    title = "Forbidden"
    slug = "forbidden"


class NotFound(TracesetsError):
    status = 404
    title = "Not found"
    slug = "not-found"


class Conflict(TracesetsError):
    status = 409
    title = "Conflict"
    slug = "conflict"


class Unprocessable(TracesetsError):
    status = 422
    title = "Unprocessable request"
    slug = "unprocessable"


class RequestTimeout(TracesetsError):
    status = 408
    title = "Request timeout"
    slug = "request-timeout"


class PayloadTooLarge(TracesetsError):
    status = 413
    title = "Payload too large"
    slug = "payload-too-large"


class UnsupportedMediaType(TracesetsError):
    status = 415
    title = "Unsupported media type"
    slug = "unsupported-media-type"


class TooManyRequests(TracesetsError):
    status = 429
    title = "Too many requests"
    slug = "too-many-requests"

    #: Whole seconds until the token may send again, for the Retry-After header.
    retry_after: int = 1


class HeadersTooLarge(TracesetsError):
    status = 431
    title = "Request header fields too large"
    slug = "headers-too-large"


class ServiceUnavailable(TracesetsError):
    status = 503
    title = "Service unavailable"
    slug = "service-unavailable"

    #: Whole seconds after which a retry may well succeed, for the Retry-After header.
    retry_after: int = 1

    @classmethod
    def busy(cls, why: str, retry_after: int) -> ServiceUnavailable:
        refusal = cls.of([Problem("", None, f"{why}; retry later")])
        refusal.retry_after = retry_after
        return refusal
