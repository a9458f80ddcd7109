"""Options the client commands take, declared once, and the client they make.

Each option is an ``Annotated`` alias (the template's ``deps.py`` habit), so a command
lists its options by name and their flags and help live here alone.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Final

import typer

from tracesets.cli.output import fail_usage
from tracesets.client import Client


def _option(*flags: str, **kw: Any) -> Any:
    """An option whose default is not worth printing in ``--help``."""
    return typer.Option(*flags, show_default=False, **kw)


Url = Annotated[
    str | None,
    _option(
        "--url", help="The service's base URL (default: TRACESETS_URL, else http://localhost:8000)."
    ),
]
Token = Annotated[
    str | None,
    _option("--token", help="Bearer token (default: TRACESETS_TOKEN, else SCALA_API_TOKEN)."),
]
#: The files to send, as ``upload`` and ``add-files`` take them.
Paths = Annotated[
    list[Path],
    typer.Argument(
        metavar="PATH...",
        exists=True,
        help="Files, or folders standing for every file under them.",
        show_default=False,
    ),
]
Supporting = Annotated[
    list[Path] | None,
    _option(
        "--supporting",
        metavar="PATH",
        exists=True,
        help="Supporting files or folders (logs, configs); inside a PATH folder they keep their "
        "name there. Repeatable.",
    ),
]
Json = Annotated[bool, typer.Option("--json", help="Print JSON instead of text.")]
Concurrency = Annotated[int, typer.Option(min=1, max=64, help="PUTs at once.")]

# -- what ``upload`` declares ----------------------------------------------------------------

#: The option that uploads traces that contradict the declared rank count anyway.
IGNORE_FLAG: Final = "--ignore-trace-ranks"

Name = Annotated[
    str | None,
    _option("--name", "-n", help="The traceset's name (default: the first PATH's name)."),
]
Description = Annotated[str | None, _option(help="Free text.")]
RankCount = Annotated[
    int | None, _option("--rank-count", help="shape.rankCount: the total rank count.")
]
Dp = Annotated[int | None, _option("--dp", help="parallelism.dp: data parallelism.")]
Tp = Annotated[int | None, _option("--tp", help="parallelism.tp: tensor parallelism.")]
Sp = Annotated[int | None, _option("--sp", help="parallelism.sp: sequence parallelism.")]
Ep = Annotated[int | None, _option("--ep", help="parallelism.ep: expert parallelism.")]
Pp = Annotated[int | None, _option("--pp", help="parallelism.pp: pipeline parallelism.")]
Cp = Annotated[
    int | None, _option("--cp", help="parallelism.cp: context parallelism (not a factor).")
]
Fsdp = Annotated[
    int | None, _option("--fsdp", help="parallelism.fsdp: FSDP degree (not a factor).")
]
Sets = Annotated[
    list[str] | None,
    _option(
        "--set",
        metavar="KEY=VALUE",
        help="Set a metadata member, e.g. shape.global_batch_size=512 or workload_family=gpt "
        "(JSON if it parses as JSON, else a string). Repeatable.",
    ),
]
MetadataFile = Annotated[
    Path | None,
    _option(
        "--metadata",
        metavar="FILE",
        exists=True,
        dir_okay=False,
        help="A JSON file holding workloadMetadata.",
    ),
]
Resume = Annotated[
    str | None,
    _option(
        "--resume",
        metavar="TRACESET_ID",
        help="Finish an interrupted upload of the same PATHs: send only what has not arrived.",
    ),
]
InferRankCount = Annotated[
    bool,
    typer.Option(
        "--infer-rank-count",
        help="With no rank count given, declare the world size the traces hold.",
    ),
]
IgnoreTraceRanks = Annotated[
    bool,
    typer.Option(
        IGNORE_FLAG,
        help="Upload even when the traces contradict the declared rank count (a world "
        "size other than it, or ranks not below it).",
    ),
]
Baseline = Annotated[
    str | None,
    _option(
        "--baseline",
        metavar="TRACESET_ID",
        help="Compare with this traceset once inspected (default: the latest promoted one of "
        "the same workload and rank count); a regression against it is a warning.",
    ),
]
JobKey = Annotated[
    str | None,
    _option(
        "--job-key",
        help="With --rank: the training job this rank belongs to (default: "
        "TORCHELASTIC_RUN_ID or SLURM_JOB_ID); every rank with the same key and world "
        "size reaches the same traceset.",
    ),
]
Rank = Annotated[
    int | None,
    _option(
        "--rank",
        min=0,
        help="Send one rank's trace FILE into its job's traceset (see --job-key); the "
        "last rank to arrive completes it.",
    ),
]
WorldSize = Annotated[
    int | None,
    _option("--world-size", min=1, help="With --rank: the job's rank count (shape.rankCount)."),
]


def check_token(token: str | None) -> None:
    """A usage error, said before any slower check (reading traces) can refuse first."""
    if token is not None and not token.strip():
        # An empty --token (an unset variable in a script) must not fall back to another one.
        fail_usage("--token is empty: pass a token, or leave --token out to use TRACESETS_TOKEN")


def client(url: str | None, token: str | None, *, concurrency: int = 8) -> Client:
    check_token(token)
    return Client(url, token, concurrency=concurrency)
