"""Tracesets: keep the traces of distributed ML training runs as tracesets.

import tracesets

with tracesets.Client() as client:  # TRACESETS_URL and TRACESETS_TOKEN
    traceset = client.upload("run-42/", name="GPT training, 256 ranks",
                             workload_metadata={"shape": {"rankCount": 256}})
    client.promote_traceset(traceset.id)
"""

__version__ = "0.1.0"

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
