"""What importing a part of the package drags in: the pure rules stay light.

Run in a fresh interpreter each, since this one has imported everything already.
"""

from __future__ import annotations

import subprocess
import sys

import pytest


def _loaded_after(statement: str, candidates: tuple[str, ...]) -> list[str]:
    probe = (
        f"import sys; {statement}; print(' '.join(m for m in {candidates!r} if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    return done.stdout.split()


@pytest.mark.parametrize(
    ("statement", "forbidden"),
    [
        ("import tracesets.workload", ("httpx", "pydantic", "fastapi", "starlette", "sqlalchemy")),
        ("import tracesets", ("httpx", "pydantic", "fastapi", "starlette")),
        *(
            (f"import tracesets.service.{module}", ("fastapi", "starlette", "uvicorn", "httpx"))
            for module in ("catalog", "inspections", "stores", "tokens", "transfers")
        ),
        # tracesets worker: the queue and the store, never the web stack.
        (
            "import tracesets.cli.worker, tracesets.service.inspections, tracesets.service.stores",
            ("fastapi", "starlette", "uvicorn"),
        ),
        # tracesets upload from a script: no terminal's bars, no httpx command line (click,
        # pygments), no per-rank analysis; only its header reader.
        (
            "from tracesets.cli.main import command_line; command_line(['upload']); "
            "import tracesets.client.reading",
            ("rich.console", "rich.progress", "pygments", "click", "tracesets.analysis"),
        ),
        # tracesets inspect reads local files: none of the client's HTTP stack.
        (
            "from tracesets.cli.main import command_line; command_line(['inspect', '--json'])",
            ("httpx", "http.client", "pydantic", "tracesets.client.sync", "tracesets.cli.upload"),
        ),
    ],
)
def test_import_loads_nothing_above_it(statement: str, forbidden: tuple[str, ...]) -> None:
    assert _loaded_after(statement, forbidden) == []


def test_the_client_is_there_on_first_use() -> None:
    assert _loaded_after("import tracesets; tracesets.Client", ("httpx",)) == ["httpx"]
