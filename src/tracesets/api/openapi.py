"""The OpenAPI 3.1 description: FastAPI's, plus what routes that read raw bodies need.

Request bodies are parsed by the strict JSON reader, not by FastAPI, so their schemas
are added here by name; FastAPI's 422 answers are replaced by the 400 problem details
the service really sends.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from tracesets import wire
from tracesets.api.connections import OPERATOR_PATHS
from tracesets.api.render import PROBLEM_JSON

_DESCRIPTIONS = {
    400: "The request breaks a rule (of a parameter, of its body, or of HTTP/1.1 itself: a "
    "malformed request line or header, which any route may meet); `errors` lists every "
    "problem found.",
    401: "No token, or a token the service does not know.",
    403: "The token lacks the scope this route needs; for signed URLs: the URL was altered, "
    "has expired or is for another file.",
    404: "No such traceset in this workspace.",
    408: "The request body stopped arriving (nothing for the body idle timeout); the "
    "connection is closed.",
    409: "The traceset is not in a state that allows this.",
    413: "The request body is larger than 4 MiB.",
    415: "The body is not sent as JSON: Content-Type must be application/json (or a +json type).",
    422: "The Idempotency-Key was used with another request body.",
    429: "The token sends requests faster than the service allows; see Retry-After.",
    503: "The service serves all the requests it can at once (for signed PUTs: receives all "
    "the uploads it can at once, or has too many files open); retry after Retry-After seconds.",
}

#: Models described by name because routes read their bodies themselves.
_BODY_MODELS: tuple[type[BaseModel], ...] = (
    wire.UploadUrlRequest,
    wire.AddFilesRequest,
    wire.PromoteRequest,
    wire.UploadWorkloadMetadata,
    wire.ProblemDetails,
)


def errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    return {
        status: {
            "description": _DESCRIPTIONS[status],
            "content": {PROBLEM_JSON: {"schema": {"$ref": "#/components/schemas/ProblemDetails"}}},
        }
        for status in statuses
    }


def json_body(schema: str) -> dict[str, Any]:
    return {
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{schema}"}}},
        }
    }


def _fastapi_422(response: dict[str, Any]) -> bool:
    """FastAPI's own 422, never sent (validation problems are 400), not one a route documents."""
    schema = response.get("content", {}).get("application/json", {}).get("schema", {})
    return str(schema.get("$ref", "")).endswith("/HTTPValidationError")


def build(app: FastAPI) -> dict[str, Any]:
    if app.openapi_schema is not None:
        return app.openapi_schema
    doc = get_openapi(
        title=app.title,
        version=app.version,
        summary=app.summary,
        description=app.description,
        routes=app.routes,
    )
    schemas: dict[str, Any] = doc.setdefault("components", {}).setdefault("schemas", {})
    _, extra = models_json_schema(
        [(model, "validation") for model in _BODY_MODELS],
        ref_template="#/components/schemas/{model}",
    )
    schemas.update(extra.get("$defs", {}))
    for name in ("HTTPValidationError", "ValidationError"):
        schemas.pop(name, None)
    for route, path in doc.get("paths", {}).items():
        for operation in path.values():
            responses = operation.setdefault("responses", {})
            if _fastapi_422(responses.get("422", {})):
                del responses["422"]
            # Any request may be refused by the HTTP parser before a route sees it (a
            # Transfer-Encoding of "?9"), answered with problem details (``connections``).
            responses.setdefault("400", errors(400)[400])
            # Any request may find the service at its bound of requests at once, but the
            # operator's probes and metrics, answered past it.
            if route not in OPERATOR_PATHS:
                responses.setdefault("503", errors(503)[503])
    app.openapi_schema = doc
    return doc


def main() -> None:
    """Print the description as committed in openapi.json (``make openapi``)."""
    import json
    import tempfile
    from pathlib import Path

    from tracesets.api.app import create_app
    from tracesets.settings import Settings

    with tempfile.TemporaryDirectory() as scratch:
        app = create_app(Settings.from_env({}, data_dir=Path(scratch)))
        print(json.dumps(app.openapi(), indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()
