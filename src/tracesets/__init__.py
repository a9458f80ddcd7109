"""Tracesets: keep the traces of distributed ML training runs as tracesets.

import tracesets

with tracesets.Client() as client:  # TRACESETS_URL and TRACESETS_TOKEN
    traceset = client.upload("run-42/", name="GPT training, 256 ranks",
                             workload_metadata={"shape": {"rankCount": 256}})
    client.promote_traceset(traceset.id)

The client is imported on first use (PEP 562), so ``import tracesets.workload`` (the
pure rules) loads neither httpx nor pydantic.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from tracesets.version import __version__

if TYPE_CHECKING:
    from tracesets.client import (
        AsyncClient,
        Client,
        ClientError,
        PromotedTraceset,
        RetryPolicy,
        Traceset,
    )

__all__ = [
    "AsyncClient",
    "Client",
    "ClientError",
    "PromotedTraceset",
    "RetryPolicy",
    "Traceset",
    "__version__",
]

_FROM_CLIENT = frozenset(__all__) - {"__version__"}


def __getattr__(name: str) -> Any:
    if name in _FROM_CLIENT:
        value = getattr(importlib.import_module("tracesets.client"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'tracesets' has no attribute {name!r}")
