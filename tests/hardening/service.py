"""The service the hardening tests start, and the description they hold it to."""

from __future__ import annotations

import secrets
import tempfile
from pathlib import Path
from typing import Any

from tests.server import ServerProcess
from tracesets.api.app import create_app
from tracesets.settings import Settings

#: Known at import, so schemathesis can be told it when it loads the description.
TOKEN = "tsk_hardening_" + secrets.token_hex(16)


def hardening_process(data_dir: Path, *, local_files: bool = False) -> ServerProcess:
    return ServerProcess(
        data_dir,
        extra_env={"TRACESETS_BOOTSTRAP_TOKEN": TOKEN},
        local_files=local_files,
    )


def described() -> dict[str, Any]:
    """The OpenAPI description the service serves at /openapi.json, without running it.

    The tests need it when pytest collects them, before any service runs (the fuzz and
    the status table check that the running service serves this very document).
    """
    with tempfile.TemporaryDirectory() as scratch:
        document: dict[str, Any] = create_app(
            Settings.from_env({}, data_dir=Path(scratch))
        ).openapi()
    return document


DOCUMENT = described()
