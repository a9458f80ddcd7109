"""The hot routes' way in: past the layers of the stack they have no use for.

A request goes through FastAPI's stack: its error layer, its telemetry and body-limit
layers, the service's compression and body timer, Starlette's exception layer, FastAPI's
exit stack, the router (trying each route in turn) and the route's own exception
wrapper, each an ``async`` call and some a wrapper of ``send``: a fifth of upload-url's
time on the event loop, in process. A hot route (``hot``) needs of them the error
handling, the compression and the body timer. ``HotFront`` sits just inside the error
layer and gives a request that fully matches a hot route exactly those, in one wrapper
of ``send`` (``CompressAnswers``' choices, the app's own exception handlers); every
other request, including one that matches a hot route's path but not its method, goes
down the stack as before. With FastAPI's telemetry on, the front is not installed, so
each request is observed as FastAPI observes it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from functools import partial
from typing import Any

from starlette.exceptions import HTTPException
from starlette.middleware.errors import ServerErrorMiddleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Match, Router
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tracesets.api.compression import VARY, Codings, is_file_route
from tracesets.api.guards import IdleBodyTimeout
from tracesets.api.hot import HotRoute

#: An exception handler of the app: the service's, FastAPI's, all coroutines.
Handler = Callable[[Request, Any], Awaitable[Response]]


class HotFront:
    def __init__(
        self,
        app: ASGIApp,
        router: Router,
        handlers: Mapping[Any, Handler],
        body_timeout: float,
        min_body_rate: int,
    ) -> None:
        self.app = app
        self.router = router
        hot = [route for route in router.routes if isinstance(route, HotRoute)]
        #: Routes without path parameters by their path, the others tried in turn.
        self._fixed = {route.path: route for route in hot if not route.param_convertors}
        self._templated = [route for route in hot if route.param_convertors]
        self._status_handlers = {k: v for k, v in handlers.items() if isinstance(k, int)}
        self._handlers = {k: v for k, v in handlers.items() if isinstance(k, type)}
        self._as_stored = IdleBodyTimeout(self._serve, body_timeout, min_body_rate)
        varying = IdleBodyTimeout(partial(self._serve, vary=True), body_timeout, min_body_rate)
        self._codings = Codings.of(self._as_stored, varying)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not scope.get("root_path"):
            fixed = self._fixed.get(scope["path"])
            for route in self._templated if fixed is None else (fixed,):
                match, child_scope = route.matches(scope)
                if match is Match.FULL:  # the router's rule: the first full match, in order
                    scope["router"] = self.router
                    scope["route"] = route
                    scope.update(child_scope)
                    await self._served(scope)(scope, receive, send)
                    return
        await self.app(scope, receive, send)

    def _served(self, scope: Scope) -> ASGIApp:
        """The endpoint as ``CompressAnswers`` would serve it, behind the body timer."""
        if is_file_route(scope):
            return self._as_stored
        return self._codings.serving(scope)

    async def _serve(
        self, scope: Scope, receive: Receive, send: Send, *, vary: bool = False
    ) -> None:
        """The route's endpoint, its errors answered by the app's handlers (as the
        exception layer and the route's wrapper would); ``vary``: the answer says it
        would be another to a client that accepts gzip."""
        request = Request(scope, receive, send)
        started = False

        async def sender(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                if vary:
                    message["headers"] = [*message.get("headers", ()), VARY]
            await send(message)

        try:
            response = await scope["endpoint"](request)
            await response(scope, receive, sender)
        except Exception as exc:
            handler = self._handler(exc)
            if handler is None:
                raise
            if started:
                raise RuntimeError(
                    "Caught handled exception, but response already started."
                ) from exc
            answer = await handler(request, exc)
            await answer(scope, receive, sender)
            exc.__traceback__ = None  # an exception kept for reuse would gather tracebacks

    def _handler(self, exc: Exception) -> Handler | None:
        if isinstance(exc, HTTPException) and exc.status_code in self._status_handlers:
            return self._status_handlers[exc.status_code]
        return next((self._handlers[c] for c in type(exc).__mro__ if c in self._handlers), None)


def install(
    stack: ASGIApp,
    router: Router,
    handlers: Mapping[Any, Handler],
    timeout: float,
    min_body_rate: int,
) -> None:
    """Put a ``HotFront`` just inside ``stack``, the app's error layer."""
    assert isinstance(stack, ServerErrorMiddleware)
    stack.app = HotFront(stack.app, router, handlers, timeout, min_body_rate)
