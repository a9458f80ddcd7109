"""Chakra host execution traces: the world size from their ``## process_group:init ##`` node.

What the format holds, as PyTorch's ``ExecutionTraceObserver`` writes it
(``torch/csrc/profiler/standalone/execution_trace_observer.cpp`` and
``torch/profiler/profiler.py``; schema ``1.1.1-chakra.0.0.4`` today)::

    {
      "schema": "1.1.1-chakra.0.0.4", "pid": 2784631, "time": "2025-04-11 13:43:51",
      "start_ts": 2188364098,
      "nodes": [
        {"id": 2, "name": "[pytorch|profiler|execution_trace|thread]", "ctrl_deps": 1, ...},
        {"id": 3, "name": "## process_group:init ##", "ctrl_deps": 2,
         "inputs": {"values": ["[{\\"pg_name\\": \\"0\\", \\"pg_desc\\": \\"default_pg\\",
                                 \\"backend_config\\": \\"cuda:nccl\\", \\"ranks\\": [],
                                 \\"group_size\\": 8, \\"group_count\\": 1}]"],
                    "shapes": [[]], "types": ["String"], "strides": [[]]},
         "outputs": {...}, "attrs": [...]},
        ...
        {"id": 1, "name": "[pytorch|profiler|execution_trace|process]", ...}
      ],
      "finish_ts": 2188366112
    }

- The observer records the node as it starts (``_record_pg_config``), so it is among
  the first nodes: the head is enough. It is a record_function whose one argument is
  ``json.dumps(torch.distributed.distributed_c10d._world.pg_config_info)``.
- ``pg_config_info`` lists the process groups this process belongs to: ``pg_name``,
  ``pg_desc``, ``backend_config``, ``ranks`` (global ranks, and an empty list when the
  group holds every rank), ``group_size``, ``group_count``. Older observers (schema
  ``1.0.x``) write ``"inputs": [...]`` with the values directly, and always list
  ``ranks``, with no ``group_size``.
- No member holds the rank of the process that wrote the trace (``pid`` is the operating
  system's process id; ``record_param_comms`` nodes describe groups, not the writer).
  The world size is the default group's size (``pg_desc`` ``default_pg`` or
  ``pg_name`` ``"0"``). So a Chakra host trace gives its world size from the header and
  its rank only from its file name.

Chakra's own protobuf ``.et`` files are known by name only (``names.py``).
"""

from __future__ import annotations

import json
from typing import Final

from tracesets.inspection.distributed import (
    Claim,
    default_group_size,
    groups_of,
    is_default_group,
)
from tracesets.inspection.jsonscan import HEAD_BUDGET, Head, ValueUnreadable, decode_value, find_key

PG_INIT_MARKER: Final = b'"## process_group:init ##"'
NO_RANK: Final = "Chakra host traces do not record their rank"


def _first_string(value: object, depth: int = 0) -> str | None:
    """The process groups' JSON text: the first string among the node's input values."""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and depth < 4:
        for item in value:
            found = _first_string(item, depth + 1)
            if found is not None:
                return found
    return None


def _node_inputs(head: Head, at: int) -> object:
    """The decoded ``inputs`` of the node named at ``at``, reading the head on as needed."""
    while True:
        inputs_at = find_key(head.data, "inputs", at)
        if inputs_at is not None:
            try:
                return decode_value(head.data, inputs_at)
            except ValueUnreadable:
                if not head.more():
                    raise
        elif not head.more():
            raise ValueUnreadable("the node has no inputs")


def read_process_groups(head: Head) -> Claim:
    """The world size of a Chakra host trace whose head is ``head``; never its rank."""
    at = head.until_bytes(PG_INIT_MARKER)
    if at is None:
        return Claim(
            problem=f"no '## process_group:init ##' node in its first {HEAD_BUDGET:,} bytes "
            "(it is recorded only when torch.distributed is initialised)"
        )
    try:
        inputs = _node_inputs(head, at + len(PG_INIT_MARKER))
    except ValueUnreadable as error:
        return Claim(problem=f"its '## process_group:init ##' node could not be read: {error}")
    values = inputs.get("values") if isinstance(inputs, dict) else inputs
    text = _first_string(values)
    try:
        groups = json.loads(text) if text is not None else None
    except (ValueError, RecursionError):
        groups = None
    if not groups_of(groups):
        return Claim(problem="its '## process_group:init ##' node lists no process groups")
    world_size = default_group_size(groups)
    backend = _backend(groups)
    if world_size is None:
        return Claim(backend=backend, problem="its process groups do not include the default one")
    return Claim(world_size=world_size, backend=backend, problem=NO_RANK)


def _backend(groups: object) -> str | None:
    """The default group's backend: ``nccl`` for ``cuda:nccl``, as Kineto traces name it."""
    for group in groups_of(groups):
        config = group.get("backend_config")
        if is_default_group(group) and isinstance(config, str) and config:
            names = {part.partition(":")[2] or part for part in config.split(",")}
            return names.pop() if len(names) == 1 else config
    return None
