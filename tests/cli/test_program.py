"""The ``tracesets`` program (``tracesets.cli:run``, the console script): the command runs
with Python's garbage collector on, and the modules loaded before it frozen out of the
collector's passes."""

from __future__ import annotations

import subprocess
import sys

from tests.server import BIN

#: ``run()`` with the command replaced, once its module is loaded, by a probe that prints
#: whether the collector is on and whether the loaded modules' objects are frozen.
PROBE = """
import builtins, gc, sys
import tracesets.cli
assert "typer" not in sys.modules and gc.get_freeze_count() == 0
load = builtins.__import__

def loading(name, *args, **kwargs):
    module = load(name, *args, **kwargs)
    if name == "tracesets.cli.main":
        module.main = lambda: print(gc.isenabled(), gc.get_freeze_count() > 1000)
    return module

builtins.__import__ = loading
tracesets.cli.run()
"""


def test_the_command_runs_with_the_collector_on_and_its_modules_frozen() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.split() == ["True", "True"]


def test_the_installed_program_is_run() -> None:
    assert "from tracesets.cli import run" in BIN.read_text()
