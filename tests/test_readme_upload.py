"""README's "Uploading a traceset" runs as pasted: its shell block, with only the address
and the token a reader would put in, uploads a traceset that ends ready. A change to the
API or to the example that breaks it for a reader breaks this test."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import httpx

from tests.flows import inspected
from tests.server import ServerProcess

ROOT = Path(__file__).resolve().parent.parent


def readme_upload_example() -> str:
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("## Uploading a traceset") :]
    block = re.search(r"^```sh\n(.*?)^```$", section, re.MULTILINE | re.DOTALL)
    assert block is not None, "README's upload section has no sh block"
    return block[1]


def test_the_readme_upload_example_uploads_a_ready_traceset(
    local_server: ServerProcess, local_api: httpx.Client
) -> None:
    token = local_api.headers["Authorization"].removeprefix("Bearer ")
    script = readme_upload_example()
    assert "http://localhost:8000" in script and "tsk_…" in script
    script = script.replace("http://localhost:8000", local_server.url).replace("tsk_…", token)
    done = subprocess.run(
        ["sh", "-e", "-c", script],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, (done.stdout, done.stderr)
    completed = json.loads(done.stdout.splitlines()[-1])
    assert completed["status"] == "ready"
    traceset = inspected(local_api, completed["id"])
    assert traceset["rankCountDerived"] == 128
    assert traceset["inspection"]["worldSize"] == 128
    assert traceset["inspection"]["missingRankCount"] == 127
