"""The ``tracesets`` command line.

httpx imports its own command line (``httpx._main``: click, pygments, rich's progress and
syntax) whenever those are installed; ``tracesets`` never runs it, and a command's
start-up should not pay for it, so the command line tells Python it is absent. httpx then
defines a stand-in ``httpx.main`` that says how to install it. A program that imported
httpx before is untouched.
"""

import sys

sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]
