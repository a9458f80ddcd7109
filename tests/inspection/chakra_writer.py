"""Chakra host execution traces as PyTorch's ExecutionTraceObserver writes them.

Two schemas: today's (``1.1.1-chakra.0.0.4``: ``"inputs": {"values": [...], ...}``,
groups with ``group_size`` and ``ranks: []`` for a group of every rank) and the older
``1.0.x`` one (``"inputs": [...]`` directly, ``ranks`` always listed). The layout is the
observer's: ``{`` / header line / ``"nodes": [`` / one node per block / ``"finish_ts"``.
"""

from __future__ import annotations

import json
from typing import Any


def pg_config_info(
    world_size: int, subgroups: list[list[int]] | None = None
) -> list[dict[str, Any]]:
    """``torch.distributed.distributed_c10d._world.pg_config_info`` of one process."""
    groups: list[dict[str, Any]] = [
        {
            "pg_name": "0",
            "pg_desc": "default_pg",
            "backend_config": "cuda:nccl",
            "ranks": [],
            "group_size": world_size,
            "group_count": 1 + len(subgroups or []),
        }
    ]
    for number, ranks in enumerate(subgroups or [], start=1):
        groups.append(
            {
                "pg_name": str(number),
                "pg_desc": "undefined",
                "backend_config": "cuda:nccl",
                "ranks": ranks,
                "group_size": len(ranks),
                "group_count": 1 + len(subgroups or []),
            }
        )
    return groups


def _attrs(rf_id: int) -> str:
    return (
        f'[{{"name": "rf_id", "type": "uint64", "value": {rf_id}}},'
        '{"name": "fw_parent", "type": "uint64", "value": 0},'
        '{"name": "seq_id", "type": "int64", "value": -1},'
        '{"name": "scope", "type": "uint64", "value": 7},'
        '{"name": "tid", "type": "uint64", "value": 1},'
        '{"name": "fw_tid", "type": "uint64", "value": 0},'
        '{"name": "op_schema", "type": "string", "value": ""},'
        '{"name": "kernel_backend", "type": "string", "value": ""},'
        '{"name": "kernel_file", "type": "string", "value": ""}]'
    )


def _node(node_id: int, name: str, parent: int, values: str) -> str:
    empty = '{"values": [], "shapes": [], "types": [], "strides": []}'
    return (
        f'\n    {{\n      "id": {node_id}, "name": {json.dumps(name)}, "ctrl_deps": {parent},'
        f'\n      "inputs": {{"values": {values}, "shapes": [[]], "types": ["String"], '
        f'"strides": [[]]}},\n      "outputs": {empty},\n      "attrs": {_attrs(node_id)}\n    }}'
    )


def chakra_host_trace(
    world_size: int | None = 8,
    *,
    subgroups: list[list[int]] | None = None,
    old_schema: bool = False,
    operators: int = 50,
) -> bytes:
    """A host trace; ``world_size`` None leaves out the ``## process_group:init ##`` node."""
    nodes = [_node(2, "[pytorch|profiler|execution_trace|thread]", 1, "[]")]
    if world_size is not None:
        groups = pg_config_info(world_size, subgroups)
        if old_schema:
            for group in groups:
                group["ranks"] = group["ranks"] or list(range(world_size))
                del group["group_size"], group["group_count"]
            nodes.append(
                f'\n    {{\n      "name": "## process_group:init ##", "id": 3, "rf_id": 1, '
                f'"parent": 2, "fw_parent": 0, "seq_id": -1, "scope": 7, "tid": 1, '
                f'"fw_tid": 0, "op_schema": "",\n      "inputs": '
                f"[{json.dumps(json.dumps(groups))}], "
                '"input_shapes": [[]], "input_types": ["String"],\n      '
                '"outputs": [], "output_shapes": [], "output_types": []\n    }'
            )
        else:
            nodes.append(
                _node(3, "## process_group:init ##", 2, f"[{json.dumps(json.dumps(groups))}]")
            )
    for number in range(operators):
        nodes.append(
            _node(4 + number, "aten::empty", 2, f'[[{number}], 4, "<None>", "cpu", false]')
        )
    nodes.append(_node(1, "[pytorch|profiler|execution_trace|process]", 1, "[]"))
    schema = "1.0.1" if old_schema else "1.1.1-chakra.0.0.4"
    text = (
        f'{{\n  "schema": "{schema}", "pid": 2784631, "time": "2025-04-11 13:43:51", '
        f'"start_ts": 2188364098,\n  "nodes": [{",".join(nodes)}\n  ],\n  "finish_ts": 2188366112\n}}'
    )
    return text.encode()
