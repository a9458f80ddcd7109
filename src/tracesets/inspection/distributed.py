"""What a trace says about its place in the job: rank, world size, backend.

PyTorch's profiler writes ``distributedInfo`` when ``torch.distributed`` is initialised
(``torch.profiler``'s ``_get_distributed_info``)::

    "distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 2, "pg_count": 1,
                        "pg_config": [{"pg_name": "0", "pg_desc": "default_pg",
                                       "backend_config": "cuda:nccl", "pg_size": 2,
                                       "ranks": [0, 1]}],
                        "nccl_version": "2.17.1"}

Kineto's on-demand traces write their own after ``traceEvents``, from what the
collectives it saw recorded: ``pg_count`` is then the number of groups that ran a
collective, not of groups in the job, and each group's ``ranks`` is copied from a
metadata value that may be a string (``"[0, 1, 2]"``). So ``pg_count`` is never read;
``ranks`` is read as a list or as such a string; and the world size comes from
``world_size``, or failing that from the default group (``pg_desc`` ``default_pg`` or
``pg_name`` ``"0"``): its ``pg_size`` or ``group_size``, else the length of ``ranks``.

Rank and world size must be whole numbers (a JSON integer, or a string of digits as some
tools write them) below 2^63; anything else is reported, not guessed at. JSON bounds no
integer, and Python's ``json`` reads ``100000000000000000000000`` whole, but findings and
figures are kept and served as JSON of 64-bit integers, and no job has such a rank.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

_DIGITS: Final = re.compile(r"[0-9]{1,18}")
#: The largest whole number read (strings of up to 18 digits are below it).
MAX_WHOLE: Final = 2**63 - 1
_SEPARATORS: Final = re.compile(r"[,\s]+")


@dataclass(frozen=True, slots=True)
class Claim:
    """A trace's own word on its rank and world size, and what was wrong with it."""

    rank: int | None = None
    world_size: int | None = None
    backend: str | None = None
    problem: str | None = None


def whole_number(value: object) -> int | None:
    """A JSON integer from 0 to ``MAX_WHOLE``, or a string of decimal digits; else None."""
    if type(value) is int:
        return value if 0 <= value <= MAX_WHOLE else None
    if isinstance(value, str) and _DIGITS.fullmatch(value.strip()):
        return int(value)
    return None


def parse_ranks(value: object) -> list[int] | None:
    """``ranks`` as a list (``[0, 1]``) or a string (``"[0, 1]"``, ``"0,1"``); None if neither."""
    if isinstance(value, list):
        ranks = [whole_number(item) for item in value]
        return None if None in ranks else [rank for rank in ranks if rank is not None]
    if isinstance(value, str):
        inside = value.strip().removeprefix("[").removesuffix("]").strip()
        tokens = [token for token in _SEPARATORS.split(inside) if token]
        if all(_DIGITS.fullmatch(token) for token in tokens):
            return [int(token) for token in tokens]
    return None


def groups_of(pg_config: object) -> list[dict[str, object]]:
    """The process groups of a ``pg_config``: a list of objects, or an object of objects."""
    items: Iterable[object]
    if isinstance(pg_config, list):
        items = pg_config
    elif isinstance(pg_config, dict):
        items = pg_config.values()
    else:
        return []
    return [item for item in items if isinstance(item, dict)]


def is_default_group(group: dict[str, object]) -> bool:
    return group.get("pg_desc") == "default_pg" or group.get("pg_name") in ("0", 0)


def default_group_size(pg_config: object) -> int | None:
    """The size of the default process group, which is the world size."""
    for group in groups_of(pg_config):
        if not is_default_group(group):
            continue
        for member in ("pg_size", "group_size"):
            size = whole_number(group.get(member))
            if size:
                return size
        ranks = parse_ranks(group.get("ranks"))
        if ranks:
            return len(ranks)
    return None


def show(value: object) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= 60 else text[:40] + "…"


def _not_whole(member: str, value: object, what: str) -> str:
    if type(value) is int and value > MAX_WHOLE:
        what = "past 64 bits (2^63 - 1 at most)"
    return f"distributedInfo.{member} is {show(value)}, {what}"


def read_distributed_info(info: object) -> Claim:
    """The claim of a decoded ``distributedInfo`` value, with every problem it has."""
    if not isinstance(info, dict):
        return Claim(problem=f"distributedInfo is {show(info)}, not a JSON object")
    problems: list[str] = []
    backend = info.get("backend")
    backend = backend if isinstance(backend, str) and backend else None

    world_size = None
    if info.get("world_size") is not None:
        world_size = whole_number(info["world_size"])
        if not world_size:
            world_size = None
            problems.append(
                _not_whole("world_size", info["world_size"], "not a whole number of at least 1")
            )
    if world_size is None:
        world_size = default_group_size(info.get("pg_config"))

    rank = None
    if info.get("rank") is None:
        problems.append("distributedInfo has no rank")
    else:
        rank = whole_number(info["rank"])
        if rank is None:
            problems.append(_not_whole("rank", info["rank"], "not a whole number"))
    if rank is not None and world_size is not None and rank >= world_size:
        problems.append(f"rank {rank:,} is not below the world size {world_size:,}")
    return Claim(rank, world_size, backend, "; ".join(problems) or None)
