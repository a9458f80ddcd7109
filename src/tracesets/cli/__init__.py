"""The ``tracesets`` command line.

httpx imports its own command line (``httpx._main``: click, pygments, rich's progress and
syntax) whenever those are installed; ``tracesets`` never runs it, and a command's
start-up should not pay for it, so the command line tells Python it is absent. httpx then
defines a stand-in ``httpx.main`` that says how to install it. A program that imported
httpx before is untouched.
"""

import gc
import sys

sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]


def run() -> None:
    """The ``tracesets`` program: ``main``, with Python's cyclic garbage collector off
    while the command line's modules load, and what they made frozen out of its later
    passes. Loading them makes no garbage worth collecting, and a short-lived command
    need not walk its modules' objects again at every pass, nor at exit: 40 ms of CPU of
    an upload's 0.5 s (bench/README). Cycles made afterwards are collected as usual."""
    gc.disable()
    try:
        from tracesets.cli.main import command_line, main

        app = command_line(sys.argv[1:])
    finally:
        gc.freeze()
        gc.enable()
    main(app)
