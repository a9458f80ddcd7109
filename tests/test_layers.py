"""Each layer imports only the layers below it (docs/architecture.md draws them).

An ``ast`` walk over every module, every import statement included (inside functions
and ``TYPE_CHECKING`` blocks too): a layer reached only lazily is still a layer reached.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = SRC / "tracesets"

# The layers, lowest first. A module belongs to the first entry whose prefix it has.
LAYERS: dict[str, int] = {
    # The pure core: the metadata rules and the shapes every other layer speaks.
    "tracesets.workload": 0,
    "tracesets.jsontext": 0,
    "tracesets.problems": 0,
    "tracesets.records": 0,
    "tracesets.version": 0,
    "tracesets.vocabulary": 0,
    "tracesets.performance": 0,  # the medians over ranks a traceset is searched by
    "tracesets.filenames": 0,  # a traceset's file names: unsafe ones, and two that are one file
    "tracesets.uploadrequest": 1,
    "tracesets.promotion": 1,
    "tracesets.settings": 1,
    "tracesets.ratelimit": 1,
    "tracesets.metrics": 1,
    "tracesets.wire": 1,
    # Reading traces: pure functions of bytes.
    "tracesets.inspection": 2,
    "tracesets.analysis": 3,
    "tracesets.jobs": 3,  # a training job's file names carry ranks as inspection reads them
    # Where things are kept.
    "tracesets.storage": 4,
    "tracesets.db": 4,
    # The use cases.
    "tracesets.service": 5,
    # The ways in.
    "tracesets.web": 6,
    "tracesets.api": 7,
    "tracesets.client": 6,
    "tracesets.torch": 7,
    "tracesets.cli": 8,
}

# Lower layers that a layer still may not import: the HTTP layer reaches the database
# only through the use cases, and the client knows nothing of the server's insides.
FORBIDDEN: dict[str, tuple[str, ...]] = {
    "tracesets.api": ("tracesets.db",),
    "tracesets.client": ("tracesets.storage", "tracesets.db", "tracesets.service"),
    "tracesets.torch": ("tracesets.storage", "tracesets.db", "tracesets.service"),
    "tracesets.web": ("tracesets.storage", "tracesets.db", "tracesets.service"),
    "tracesets.storage": ("tracesets.db",),
    "tracesets.db": ("tracesets.storage",),
}

# The application factory builds the database it hands to the use cases.
ALLOWED: dict[str, tuple[str, ...]] = {"tracesets.api.app": ("tracesets.db",)}

# Libraries that belong to one layer: the core and the use cases run without a web
# framework or an HTTP client (a worker, a script, the command line's checks).
LIBRARIES: dict[str, tuple[str, ...]] = {
    "fastapi": ("tracesets.api", "tracesets.web"),
    "starlette": ("tracesets.api", "tracesets.web"),
    "uvicorn": ("tracesets.api", "tracesets.cli"),
    "httpx": ("tracesets.client", "tracesets.cli"),
    "typer": ("tracesets.cli",),
    "rich": ("tracesets.cli",),
    "sqlalchemy": ("tracesets.db", "tracesets.service"),
    "alembic": ("tracesets.db",),
    "boto3": ("tracesets.storage",),
    "botocore": ("tracesets.storage",),
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _layer_of(module: str) -> tuple[str, int] | None:
    for prefix in sorted(LAYERS, key=len, reverse=True):
        if module == prefix or module.startswith(prefix + "."):
            return prefix, LAYERS[prefix]
    return None


def _imports(path: Path, source: str) -> list[tuple[int, str]]:
    module = _module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source, str(path))):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            # ``from tracesets import client`` imports the submodule, not just the package.
            found.extend((node.lineno, f"{base}.{alias.name}") for alias in node.names)
    return found


def _is_within(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def _violations(path: Path, source: str | None = None) -> list[str]:
    module = _module_name(path)
    own = _layer_of(module)
    found: list[str] = []
    for line, name in _imports(path, path.read_text() if source is None else source):
        where = f"{path.relative_to(SRC)}:{line} imports {name}"
        top = name.split(".")[0]
        if top in LIBRARIES and not any(_is_within(module, p) for p in LIBRARIES[top]):
            found.append(f"{where}, a library of another layer")
        if own is None or top != "tracesets":
            continue
        target = _layer_of(name)
        if target is None or _is_within(name, own[0]):
            continue
        allowed = ALLOWED.get(module, ())
        if any(_is_within(name, p) for p in allowed):
            continue
        if target[1] > own[1]:
            found.append(f"{where}, a layer above {own[0]}")
        elif any(_is_within(name, p) for p in FORBIDDEN.get(own[0], ())):
            found.append(f"{where}, which {own[0]} may not reach")
    return found


MODULES = sorted(PACKAGE.rglob("*.py"))


def test_every_module_has_a_layer() -> None:
    unplaced = [
        _module_name(p)
        for p in MODULES
        if p != PACKAGE / "__init__.py" and _layer_of(_module_name(p)) is None
    ]
    assert unplaced == []


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_go_down(path: Path) -> None:
    assert _violations(path) == []


@pytest.mark.parametrize(
    ("module", "source", "why"),
    [
        ("workload.py", "def f():\n    from tracesets.service import catalog\n", "a layer above"),
        ("api/routes.py", "from tracesets.db.queries import ListFilter\n", "may not reach"),
        ("client/sync.py", "from ..storage import base\n", "may not reach"),
        ("service/catalog.py", "import fastapi\n", "a library of another layer"),
    ],
)
def test_the_walk_sees_a_wrong_import(module: str, source: str, why: str) -> None:
    # The rule itself must be able to fail, whichever way a module is imported.
    (found,) = _violations(PACKAGE / module, source)
    assert why in found
