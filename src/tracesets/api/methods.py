"""Which methods a path answers: a 405's ``Allow``, and concrete paths before templates.

OpenAPI matches a concrete path before a templated one, and so does the service: a path
some route declares without parameters (``/api/v1/tracesets/upload-url``) is that
route's alone. Without this, a method it does not answer would fall to a templated route
whose parameter takes the path's last segment (``GET …/upload-url`` read as the
traceset "upload-url"), and its 405 would name that route's methods.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from fastapi.routing import iter_route_contexts
from starlette.exceptions import HTTPException
from starlette.routing import BaseRoute, Match, NoMatchFound
from starlette.types import Receive, Scope, Send

#: The methods a 405 probes a templated path with (OPTIONS and the rest no route answers).
PROBED = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE")


class ConcretePaths(BaseRoute):
    """Tried before every route: a request to a concrete path with a method its routes do
    not answer is 405 there, whatever a templated route would take."""

    def __init__(self, methods: Mapping[str, frozenset[str]]) -> None:
        self.methods = methods

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        if scope["type"] == "http" and not scope.get("root_path"):
            answered = self.methods.get(scope["path"])
            if answered is not None and scope["method"] not in answered:
                return Match.FULL, {}
        return Match.NONE, {}

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        raise HTTPException(405)  # the app's handler answers it, with allowed_methods

    def url_path_for(self, name: str, /, **path_params: Any) -> Any:
        raise NoMatchFound(name, path_params)


def own_concrete_paths(routes: list[BaseRoute]) -> None:
    """Put a ``ConcretePaths`` of ``routes``' concrete paths before them all."""
    methods: dict[str, frozenset[str]] = {}
    for route in iter_route_contexts(routes):
        if route.path and route.methods and not getattr(route, "param_convertors", None):
            methods[route.path] = methods.get(route.path, frozenset()) | route.methods
    routes.insert(0, ConcretePaths(methods))


def allowed_methods(routes: Sequence[BaseRoute], scope: Scope) -> list[str]:
    """The methods the request's path answers (a 405's Allow): a concrete path's own, else
    every method some route answers there."""
    concrete = next((r for r in routes if isinstance(r, ConcretePaths)), None)
    if concrete is not None and (own := concrete.methods.get(scope["path"])) is not None:
        return [method for method in PROBED if method in own]
    return [
        method
        for method in PROBED
        if any(route.matches({**scope, "method": method})[0] == Match.FULL for route in routes)
    ]
