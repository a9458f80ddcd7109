"""``workloadMetadata`` from the command line: a JSON file, then options, then ``--set``.

``--rank-count`` sets ``shape.rankCount``; ``--dp`` … ``--fsdp`` set ``parallelism.*``;
``--set shape.global_batch_size=512`` sets a dotted member, taking the value as JSON when
it parses as JSON, else as a string. Files and values are read strictly, numbers as
written (``2.0`` stays ``2.0``), so the rules see exactly what the service would.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Final

from tracesets import jsontext
from tracesets.cli.output import fail_usage
from tracesets.jsontext import JsonValue

DEGREE_OPTIONS: Final = ("dp", "tp", "sp", "ep", "pp", "cp", "fsdp")


def read_file(path: Path) -> JsonValue:
    try:
        return jsontext.loads(path.read_bytes())
    except OSError as exc:
        fail_usage(f"--metadata {path}: {exc.strerror or exc}")
    except jsontext.JsonError as exc:
        fail_usage(f"--metadata {path}: {exc}")


def parse_assignment(text: str) -> tuple[list[str], JsonValue]:
    """``a.b=value`` → (["a", "b"], value as JSON, or the text itself)."""
    key, equals, raw = text.partition("=")
    path = key.strip().split(".")
    if not equals or not all(path):
        fail_usage(
            f"--set {text!r}: write KEY=VALUE, KEY a member path such as shape.global_batch_size"
        )
    try:
        value: JsonValue = jsontext.loads(raw)
    except jsontext.JsonError:
        value = raw
    return path, value


def assign(metadata: dict[str, JsonValue], path: Sequence[str], value: JsonValue) -> None:
    """Set a dotted member, making the objects on the way (null counts as absent)."""
    here = metadata
    for depth, key in enumerate(path[:-1]):
        inner = here.get(key)
        if inner is None:
            inner = here[key] = {}
        if not isinstance(inner, dict):
            dotted = ".".join(path[: depth + 1])
            fail_usage(
                f"cannot set {'.'.join(path)}: {dotted} is {jsontext.dumps(inner).decode()}, not an object"
            )
        here = inner
    here[path[-1]] = value


def build(
    base: JsonValue,
    *,
    rank_count: int | None = None,
    degrees: Mapping[str, int | None] | None = None,
    sets: Sequence[str] = (),
) -> JsonValue:
    """The metadata the options describe; ``None`` (absent) when they describe none."""
    changes: list[tuple[list[str], JsonValue]] = []
    options: list[tuple[list[str], str]] = []  # what an option sets, and the option as typed
    if rank_count is not None:
        changes.append((["shape", "rankCount"], rank_count))
        options.append((["shape", "rankCount"], f"--rank-count {rank_count}"))
    for name, degree in (degrees or {}).items():
        if degree is not None:
            changes.append((["parallelism", name], degree))
            options.append((["parallelism", name], f"--{name} {degree}"))
    for text in sets:
        path, value = parse_assignment(text)
        for set_by_option, option in options:
            # --set shape.rankCount=… or --set shape={…} would silently undo the option.
            if set_by_option[: len(path)] == path:
                fail_usage(
                    f"--set {text} conflicts with {option}: both set "
                    f"{'.'.join(set_by_option)}; give it once"
                )
        changes.append((path, value))
    if not changes:
        return base
    if base is None:
        base = {}
    if not isinstance(base, dict):
        fail_usage(f"the metadata file holds {jsontext.dumps(base).decode()[:60]}, not an object")
    for path, value in changes:
        assign(base, path, value)
    return base
