"""README's "Compare two runs" runs as pasted: its Python block, with only the address and
the token a reader's environment gives it, uploads two runs, finds the first the second's
baseline and compares them; its command compares them too."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import httpx

from tests.cli.test_cli import ok, run_tracesets
from tests.server import ServerProcess

ROOT = Path(__file__).resolve().parent.parent


def readme_compare_blocks() -> tuple[str, str]:
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("## Compare two runs") :]
    section = section[: section.index("\n## ", 1)]
    python = re.search(r"^```python\n(.*?)^```$", section, re.MULTILINE | re.DOTALL)
    shell = re.search(r"^```sh\n(.*?)^```$", section, re.MULTILINE | re.DOTALL)
    assert python is not None and shell is not None, "README's compare section lost a block"
    return python[1], shell[1]


def test_the_readme_compare_example_runs(
    local_server: ServerProcess, local_api: httpx.Client
) -> None:
    token = local_api.headers["Authorization"].removeprefix("Bearer ")
    python, shell = readme_compare_blocks()
    env = {**os.environ, "TRACESETS_URL": local_server.url, "TRACESETS_TOKEN": token}
    script = python + "print(this.id, last.id)\n"
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, (done.stdout, done.stderr)
    lines = done.stdout.splitlines()
    assert lines[0] == "1.0 0.0"
    assert len(lines) > 3 and all(line.endswith(" 0.0") for line in lines[1:-1])
    this, last = lines[-1].split()
    settings = {"TRACESETS_URL": local_server.url, "TRACESETS_TOKEN": token}
    starts = [f"{this} against baseline {last}", "operators and kernels, by absolute difference"]
    commands = shell.strip().splitlines()
    assert len(commands) == len(starts)
    for line, start in zip(commands, starts, strict=True):
        command, _, _ = line.partition("#")
        args = command.replace("<this id>", this).replace("<last id>", last).split()[1:]
        assert ok(run_tracesets(*args, env=settings, cwd=ROOT)).stdout.startswith(start)
