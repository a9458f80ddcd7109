"""``tracesets upload``: files or folders → one traceset, checked locally first."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Final, NoReturn

import typer

from tracesets import workload
from tracesets.cli import metadata, options
from tracesets.cli.inspect import inspect_local
from tracesets.cli.job import upload_one_rank
from tracesets.cli.output import REFUSED, error_lines, json_text, say, size, warn
from tracesets.cli.progress import display
from tracesets.client import ClientError, Traceset, protocol
from tracesets.client.files import LocalFile, collect, total_size
from tracesets.inspection import Summary, summarize
from tracesets.jsontext import JsonValue

#: The options that declare a rank count, for messages that ask for one.
RANK_FLAGS: Final = (
    "--rank-count N, or the parallelism degrees --dp, --tp, --sp, --ep, --pp "
    "(their product), or both"
)
#: The option that uploads traces that contradict the declared rank count anyway.
IGNORE_FLAG: Final = "--ignore-trace-ranks"


def upload(
    paths: options.Paths,
    name: Annotated[
        str | None,
        typer.Option(
            "--name",
            "-n",
            help="The traceset's name (default: the first PATH's name).",
            show_default=False,
        ),
    ] = None,
    description: Annotated[str | None, typer.Option(help="Free text.", show_default=False)] = None,
    rank_count: Annotated[
        int | None,
        typer.Option(
            "--rank-count", help="shape.rankCount: the total rank count.", show_default=False
        ),
    ] = None,
    dp: Annotated[
        int | None,
        typer.Option("--dp", help="parallelism.dp: data parallelism.", show_default=False),
    ] = None,
    tp: Annotated[
        int | None,
        typer.Option("--tp", help="parallelism.tp: tensor parallelism.", show_default=False),
    ] = None,
    sp: Annotated[
        int | None,
        typer.Option("--sp", help="parallelism.sp: sequence parallelism.", show_default=False),
    ] = None,
    ep: Annotated[
        int | None,
        typer.Option("--ep", help="parallelism.ep: expert parallelism.", show_default=False),
    ] = None,
    pp: Annotated[
        int | None,
        typer.Option("--pp", help="parallelism.pp: pipeline parallelism.", show_default=False),
    ] = None,
    cp: Annotated[
        int | None,
        typer.Option(
            "--cp", help="parallelism.cp: context parallelism (not a factor).", show_default=False
        ),
    ] = None,
    fsdp: Annotated[
        int | None,
        typer.Option(
            "--fsdp", help="parallelism.fsdp: FSDP degree (not a factor).", show_default=False
        ),
    ] = None,
    sets: Annotated[
        list[str] | None,
        typer.Option(
            "--set",
            metavar="KEY=VALUE",
            help="Set a metadata member, e.g. shape.global_batch_size=512 or workload_family=gpt "
            "(JSON if it parses as JSON, else a string). Repeatable.",
            show_default=False,
        ),
    ] = None,
    metadata_file: Annotated[
        Path | None,
        typer.Option(
            "--metadata",
            metavar="FILE",
            exists=True,
            dir_okay=False,
            help="A JSON file holding workloadMetadata.",
            show_default=False,
        ),
    ] = None,
    supporting: Annotated[
        list[Path] | None,
        typer.Option(
            "--supporting",
            metavar="PATH",
            exists=True,
            help="Supporting files or folders (logs, configs); inside a PATH folder they keep their "
            "name there. Repeatable.",
            show_default=False,
        ),
    ] = None,
    resume: Annotated[
        str | None,
        typer.Option(
            "--resume",
            metavar="TRACESET_ID",
            help="Finish an interrupted upload of the same PATHs: send only what has not arrived.",
            show_default=False,
        ),
    ] = None,
    infer_rank_count: Annotated[
        bool,
        typer.Option(
            "--infer-rank-count",
            help="With no rank count given, declare the world size the traces hold.",
        ),
    ] = False,
    ignore_trace_ranks: Annotated[
        bool,
        typer.Option(
            IGNORE_FLAG,
            help="Upload even when the traces contradict the declared rank count (a world "
            "size other than it, or ranks not below it).",
        ),
    ] = False,
    concurrency: Annotated[int, typer.Option(min=1, max=64, help="PUTs at once.")] = 8,
    job_key: Annotated[
        str | None,
        typer.Option(
            "--job-key",
            help="With --rank: the training job this rank belongs to (default: "
            "TORCHELASTIC_RUN_ID or SLURM_JOB_ID); every rank with the same key and world "
            "size reaches the same traceset.",
            show_default=False,
        ),
    ] = None,
    rank: Annotated[
        int | None,
        typer.Option(
            "--rank",
            min=0,
            help="Send one rank's trace FILE into its job's traceset (see --job-key); the "
            "last rank to arrive completes it.",
            show_default=False,
        ),
    ] = None,
    world_size: Annotated[
        int | None,
        typer.Option(
            "--world-size",
            min=1,
            help="With --rank: the job's rank count (shape.rankCount).",
            show_default=False,
        ),
    ] = None,
    as_json: options.Json = False,
    url: options.Url = None,
    token: options.Token = None,
) -> None:
    """Upload files or folders as one traceset, with a progress bar; print the traceset.

    The request is checked with the service's own rules before anything is sent.
    """
    if rank is not None or world_size is not None or job_key is not None:
        upload_one_rank(
            paths,
            job_key=job_key,
            rank=rank,
            world_size=world_size,
            degrees={"dp": dp, "tp": tp, "sp": sp, "ep": ep, "pp": pp},
            name=name,
            url=url,
            token=token,
        )
        return
    options.check_token(token)
    base = metadata.read_file(metadata_file) if metadata_file is not None else None
    workload_metadata = metadata.build(
        base,
        rank_count=rank_count,
        degrees={"dp": dp, "tp": tp, "sp": sp, "ep": ep, "pp": pp, "cp": cp, "fsdp": fsdp},
        sets=sets or (),
    )
    name = name or paths[0].resolve().name
    files = collect(paths, supporting or ())
    warnings: list[str] = []
    if resume is None:
        workload_metadata, warnings = check_against_traces(
            files, workload_metadata, infer=infer_rank_count, ignore=ignore_trace_ranks
        )
        # The very same rules as the service, before a byte is read or a request sent.
        try:
            protocol.upload_url_body(
                name=name,
                files=[f.spec() for f in files],
                workload_metadata=workload_metadata,
                description=description,
            )
        except ClientError as error:
            _refuse(error)
    verb = "uploading" if resume is None else "resuming"
    with (
        options.client(url, token, concurrency=concurrency) as client,
        display(verb, "uploaded", len(files), total_size(files), hashing=True) as shown,
    ):
        if resume is not None:
            traceset = client.resume_upload(
                resume,
                paths,
                supporting=supporting or (),
                progress=shown.moved,
                hash_progress=shown.hashed,
            )
        else:
            traceset = client.upload(
                paths,
                name=name,
                workload_metadata=workload_metadata,
                description=description,
                supporting=supporting or (),
                progress=shown.moved,
                hash_progress=shown.hashed,
            )
    if as_json:
        say(json_text(traceset))
    else:
        say(summary(traceset))
    if warnings:  # said before a long upload, scrolled away since: the rank count is final
        warn(f"{len(warnings)} warning{'' if len(warnings) == 1 else 's'} from before the upload:")
        for warning in warnings:
            warn(f"  warning: {warning}")


def check_against_traces(
    files: list[LocalFile], workload_metadata: JsonValue, *, infer: bool, ignore: bool
) -> tuple[JsonValue, list[str]]:
    """Read the traces' own ranks before sending a byte: propose, infer, refuse or warn.

    With no rank count declared, the world size the traces agree on is proposed (and
    declared with ``--infer-rank-count``). With one declared, traces that contradict it
    (another world size, a rank not below it) stop the upload unless ``ignore``: the rank
    count cannot change once uploaded. Traces of only some ranks are normal: they inform,
    they do not refuse. Returns the metadata to send and the warnings said.
    """
    rules = workload.check_rank_count(workload_metadata, has_primary_files=False)
    if rules.problems:
        return workload_metadata, []  # the rules refuse it anyway, and say why
    findings = inspect_local(files)
    if not findings:
        return workload_metadata, []
    declared = rules.rank_count
    found = summarize(findings, declared_rank_count=declared)
    if declared is None and infer and found.world_size is None:
        sizes = ", ".join(f"{size:,}" for size in found.world_sizes)
        why = (
            f"the traces disagree on the world size ({sizes})"
            if sizes
            else "no trace gives its world size"
        )
        warn(f"error: --infer-rank-count: {why}; declare the rank count with {RANK_FLAGS}")
        raise typer.Exit(REFUSED)
    if declared is None and found.world_size is not None:
        if infer and isinstance(workload_metadata, dict | None):
            shape = dict((workload_metadata or {}).get("shape") or {})
            shape["rankCount"] = found.world_size
            warn(f"declaring shape.rankCount = {found.world_size}: the world size the traces hold")
            return {**(workload_metadata or {}), "shape": shape}, []
        proposal = (
            f"The traces say the world size is {found.world_size}: declare it with "
            f"--rank-count {found.world_size}, or let --infer-rank-count do it."
        )
        warn(proposal)
        return workload_metadata, [proposal]
    if declared is not None and not ignore and _contradicts(found, declared):
        _stop(found, declared)
    for warning in found.warnings:
        warn(f"warning: {warning}")
    return workload_metadata, found.warnings


def _contradicts(found: Summary, declared: int) -> bool:
    """A world size other than the declared rank count, or a rank not below it."""
    return any(size != declared for size in found.world_sizes) or any(
        rank >= declared for rank in found.ranks_found
    )


def _stop(found: Summary, declared: int) -> NoReturn:
    ranks = f"{declared:,} rank{'' if declared == 1 else 's'}"
    warn(f"error: the traces contradict the declared rank count ({ranks}); nothing was sent:")
    for warning in found.warnings:
        warn(f"  {warning}")
    held = (
        f"{found.world_size:,} ranks, as the traces hold"
        if found.world_size is not None
        else "the rank count the traces hold"
    )
    warn(
        f"Declare {held} (--rank-count, or the parallelism degrees): it cannot change after "
        f"upload. Or pass {IGNORE_FLAG} to upload anyway."
    )
    raise typer.Exit(REFUSED)


def _refuse(error: ClientError) -> NoReturn:
    """The rules' refusal, and for a missing rank count the options that declare one."""
    for line in error_lines(error):
        warn(line)
    if any(p.message == workload.MISSING_RANK_COUNT for p in error.problems):
        warn(f"On the command line: {RANK_FLAGS}.")
    raise typer.Exit(REFUSED)


def summary(traceset: Traceset) -> str:
    files = traceset.fileCount
    ranks = (
        "no rank count"
        if traceset.rankCountDerived is None
        else f"{traceset.rankCountDerived} ranks"
    )
    total = size(traceset.fileBytes)
    return (
        f"{traceset.id}  {json.dumps(traceset.name, ensure_ascii=False)}  {traceset.status}, "
        f"{files} file{'' if files == 1 else 's'}, {total}, {ranks}"
    )
