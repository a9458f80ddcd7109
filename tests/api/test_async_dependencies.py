"""Every route's endpoint and dependencies are coroutines: FastAPI runs a plain function on
a worker thread, and that hop (about 0.2 ms, more under load) cost a list a third of its
time when one filter parser was a plain function. Blocking work is handed to a thread by
the endpoint itself, where it is meant."""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from typing import Any

from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute

from tracesets import web
from tracesets.api import access, blobs, routes


def _is_coroutine(call: Any) -> bool:
    return inspect.iscoroutinefunction(call) or inspect.iscoroutinefunction(type(call).__call__)


def _calls(dependant: Dependant) -> Iterator[tuple[str, Any]]:
    for sub in dependant.dependencies:
        yield getattr(sub.call, "__name__", type(sub.call).__name__), sub.call
        yield from _calls(sub)


def test_no_endpoint_or_dependency_is_run_on_a_worker_thread_by_fastapi() -> None:
    plain, checked = [], 0
    for router in (routes.router, blobs.router, access.router, web.router):
        for route in router.routes:
            if not isinstance(route, APIRoute):
                continue
            called = [("endpoint", route.endpoint), *_calls(route.dependant)]
            checked += len(called)
            plain += [f"{route.name}: {name}" for name, call in called if not _is_coroutine(call)]
    assert checked > 50 and plain == []
