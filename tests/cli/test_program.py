"""The ``tracesets`` program (``tracesets.cli:run``, the console script): the command runs
with Python's garbage collector on, and the modules loaded before it frozen out of the
collector's passes."""

from __future__ import annotations

import subprocess
import sys

import pytest
import typer
from typer.core import TyperGroup
from typer.testing import CliRunner

from tests.server import BIN
from tracesets.cli.main import COMMANDS, command_line

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
        module.main = lambda app: print(gc.isenabled(), gc.get_freeze_count() > 1000)
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


ARGS = [
    *([name, "--help"] for name in COMMANDS),
    ["token", "list", "--help"],
    ["upload"],  # a usage error: its message names the command
    ["inspect", "--no-such-option"],
    ["no-such-command"],
    ["--help"],
    [],
]


@pytest.mark.parametrize("args", ARGS, ids=" ".join)
def test_the_program_built_for_one_command_reads_it_as_the_whole_program_does(
    args: list[str],
) -> None:
    whole = CliRunner().invoke(command_line(), args, env={"COLUMNS": "100"})
    built = CliRunner().invoke(command_line(args), args, env={"COLUMNS": "100"})
    assert (built.exit_code, built.output) == (whole.exit_code, whole.output)
    assert whole.exit_code in (0, 2)


def test_the_program_built_for_one_command_holds_only_that_command() -> None:
    program = typer.main.get_command(command_line(["inspect", "."]))
    assert isinstance(program, TyperGroup)
    assert sorted(program.commands) == ["inspect"]
