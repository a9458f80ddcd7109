"""The one exception the client raises, and the command line turns into one line and exit 1.

    ClientError
        status 400, sent=False   refused by the upload rules before anything was sent
                                  (the very same rules and messages as the service's)
        status 4xx/5xx           refused by the service: its problem details
        status None              no answer: nothing listens, a timeout, a broken file

``problems`` lists every problem with its member, the value given and the rule's message.
``traceset_id`` names the pending traceset an upload that failed half-way leaves behind;
``resume_upload`` sends what it still lacks.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from tracesets import jsontext
from tracesets.problems import Problem, TracesetsError

if TYPE_CHECKING:
    import httpx

    from tracesets.wire import ProblemDetails


class ClientError(Exception):
    """A refusal (by the rules or the service) or a failure to reach the service."""

    def __init__(
        self,
        detail: str,
        *,
        status: int | None = None,
        title: str | None = None,
        type: str | None = None,
        problems: Sequence[Problem] = (),
        sent: bool = True,
    ) -> None:
        super().__init__(detail)
        self.detail = detail
        self.status = status
        self.title = title
        self.type = type
        self.problems = list(problems)
        self.sent = sent
        self.traceset_id: str | None = None

    def __str__(self) -> str:
        """Every problem, one a line (a message that does not name its member gets it)."""
        if len(self.problems) <= 1:
            return self.detail
        return "\n".join(
            p.message if not p.member or p.member in p.message else f"{p.member}: {p.message}"
            for p in self.problems
        )

    def __repr__(self) -> str:
        return f"ClientError({self.detail!r}, status={self.status!r})"

    @classmethod
    def refused_locally(cls, error: TracesetsError) -> ClientError:
        """The rules refused a request before it was sent, exactly as the service would."""
        return cls(
            error.detail,
            status=error.status,
            title=error.title,
            type=f"urn:tracesets:problem:{error.slug}",
            problems=error.problems,
            sent=False,
        )

    @classmethod
    def from_response(cls, response: httpx.Response, what: str) -> ClientError:
        """The service's problem details, or a summary of an answer that has none."""
        details = _problem_details(response)
        if details is not None:
            return cls(
                details.detail,
                status=response.status_code,
                title=details.title,
                type=details.type,
                problems=[Problem(p.member, p.value, p.message) for p in details.errors],
            )
        text = " ".join(_text(response).split())[:200]
        reason = response.reason_phrase or "error"
        return cls(
            f"{what} answered {response.status_code} {reason}" + (f": {text}" if text else ""),
            status=response.status_code,
            title=reason,
        )

    @classmethod
    def no_answer(cls, what: str, exc: Exception) -> ClientError:
        why = str(exc) or type(exc).__name__
        return cls(f"{what}: no answer ({why})")


def _text(response: httpx.Response) -> str:
    import httpx  # loaded by whoever got the response; ``tracesets inspect`` never does

    try:
        response.read()  # a no-op once read; the async client reads before it comes here
        return response.text
    except (httpx.HTTPError, RuntimeError):
        return ""


def _problem_details(response: httpx.Response) -> ProblemDetails | None:
    kind = response.headers.get("content-type", "")
    if not kind.startswith(("application/problem+json", "application/json")):
        return None
    import httpx
    import pydantic  # a refusal's details only: an upload that goes well never needs it

    from tracesets.wire import ProblemDetails

    try:
        response.read()
        body: Any = jsontext.loads(response.content)
        return ProblemDetails.model_validate(body)
    except (ValueError, pydantic.ValidationError, httpx.HTTPError, RuntimeError):
        return None
