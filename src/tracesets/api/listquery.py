"""Query parameters the list does not take are refused, each named, near misses corrected.

A misspelt filter that were ignored would answer every traceset, which reads as "these all
match": the worst answer a filter can give. So every unknown name is a problem of its own,
and one that is a known name in another spelling (``workloadFamily``, ``rankCount``,
``workloadMetadata.workload_family``) says which name is meant.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable

from fastapi import Request
from fastapi.routing import APIRoute

from tracesets.problems import InvalidRequest, Problem

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_PREFIXES = ("workloadmetadata.", "workload_metadata.", "shape.", "parallelism.")


def _plain(name: str) -> str:
    """``workloadMetadata.shape.globalBatchSize`` → ``global_batch_size``: the spelling a
    person most likely meant, for comparison only."""
    plain = _CAMEL.sub("_", name.strip()).lower().replace("-", "_")
    changed = True
    while changed:
        changed = False
        for prefix in _PREFIXES:
            if plain.startswith(prefix):
                plain, changed = plain[len(prefix) :], True
    return plain


def suggestion(name: str, known: Iterable[str]) -> str | None:
    """The known parameter ``name`` most likely stands for, if any is close enough."""
    by_plain = {_plain(k): k for k in known}
    close = difflib.get_close_matches(_plain(name), list(by_plain), n=1, cutoff=0.75)
    return by_plain[close[0]] if close else None


def unknown_parameters(given: Iterable[tuple[str, str]], known: Iterable[str]) -> list[Problem]:
    """One problem per distinct unknown name, in the order given."""
    allowed = list(known)
    problems: list[Problem] = []
    seen: set[str] = set()
    for name, value in given:
        if name in allowed or name in seen:
            continue
        seen.add(name)
        meant = suggestion(name, allowed)
        hint = (
            f"; did you mean {meant}?"
            if meant is not None
            else f"; it takes {', '.join(sorted(allowed))}"
        )
        problems.append(
            Problem(name, value, f"{name} is not a query parameter of this route{hint}")
        )
    return problems


async def refuse_unknown_query(request: Request) -> None:
    """400 naming each query parameter the route declares none of (in its own signature)."""
    route = request.scope.get("route")
    if not isinstance(route, APIRoute):
        return
    known = [p.alias for p in route.dependant.query_params]
    problems = unknown_parameters(request.query_params.multi_items(), known)
    if problems:
        raise InvalidRequest.of(problems)
