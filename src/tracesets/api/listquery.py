"""The list's query parameters: its filters, made from the vocabulary, and every other
name refused, each named, near misses corrected.

A misspelt filter that were ignored would answer every traceset, which reads as "these all
match": the worst answer a filter can give. So every unknown name is a problem of its own,
and one that is a known name in another spelling (``workloadFamily``, ``rankCount``,
``workloadMetadata.workload_family``) says which name is meant.
"""

from __future__ import annotations

import difflib
import inspect
import re
from collections.abc import Iterable
from typing import Annotated, Any

from fastapi import Depends, Query, Request
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute

from tracesets.problems import InvalidRequest, Problem
from tracesets.vocabulary import FILTERS, Filter, ListFilter, Status

#: Text a filter can match: no stored string holds U+0000 (PostgreSQL cannot store one).
_NO_NUL = r"^[^\x00]*$"

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


def _query_names(dependant: Dependant) -> list[str]:
    """The query parameters of a route or dependency, and of the dependencies it uses."""
    return [p.alias for p in dependant.query_params] + [
        name for used in dependant.dependencies for name in _query_names(used)
    ]


async def refuse_unknown_query(request: Request) -> None:
    """400 naming each query parameter the route declares none of (in its signature or its
    dependencies')."""
    route = request.scope.get("route")
    if not isinstance(route, APIRoute):
        return
    known = _query_names(route.dependant)
    problems = unknown_parameters(request.query_params.multi_items(), known)
    if problems:
        raise InvalidRequest.of(problems)


def _parameter(term: Filter, name: str, alias: str | None = None) -> inspect.Parameter:
    """The query parameter of one filter, typed and bounded as the vocabulary says."""
    kinds: dict[str, tuple[Any, dict[str, Any]]] = {
        "status": (Status, {}),
        "text": (str, {"pattern": _NO_NUL}),
        "integer": (int, {"ge": 1, "le": term.maximum}),
        "boolean": (bool, {}),
        "decimal": (float, {"allow_inf_nan": False}),
    }
    kind, bounds = kinds[term.kind]
    description = term.description
    if alias is not None:
        description = (
            f"The same filter as {term.name}, in the member's own dotted spelling; giving "
            "both with different values is refused."
        )
    query = Query(alias=alias, description=description, **bounds)
    return inspect.Parameter(
        name, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=Annotated[kind | None, query]
    )


async def _list_filter(**given: Any) -> ListFilter:
    # async: FastAPI runs a plain function on a worker thread, a hop that cost more than this.
    for term in FILTERS:
        if term.alias is None:
            continue
        spelt = given.pop(_alias_name(term), None)
        if spelt is None:
            continue
        if given[term.name] not in (None, spelt):
            raise InvalidRequest.of(
                [
                    Problem(
                        term.alias,
                        spelt,
                        f"{term.name} and {term.alias} are one filter: give one value",
                    )
                ]
            )
        given[term.name] = spelt
    return ListFilter(**given)


def _alias_name(term: Filter) -> str:
    return "_" + (term.alias or term.name).replace(".", "_")


def _signature() -> inspect.Signature:
    parameters = []
    for term in FILTERS:
        parameters.append(_parameter(term, term.name))
        if term.alias is not None:
            parameters.append(_parameter(term, _alias_name(term), term.alias))
    return inspect.Signature(parameters, return_annotation=ListFilter)


# FastAPI reads a dependency's parameters from its signature: these are the vocabulary's.
_list_filter.__signature__ = _signature()  # type: ignore[attr-defined]

#: The list's filters, as query parameters, read into a ``ListFilter``.
ListFilterQuery = Annotated[ListFilter, Depends(_list_filter)]
