"""``tracesets upload``: files or folders → one traceset, checked locally first."""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import partial
from typing import Final, NoReturn, Protocol

import typer

from tracesets import workload
from tracesets.cli import metadata, options
from tracesets.cli.inspect import inspect_local
from tracesets.cli.job import upload_one_rank
from tracesets.cli.output import REFUSED, error_lines, json_text, say, size, warn
from tracesets.cli.progress import display
from tracesets.client import ClientError
from tracesets.client.answers import TracesetAnswer
from tracesets.client.core import UploadPlan
from tracesets.client.files import LocalFile, collect, total_size
from tracesets.inspection import Summary, summarize
from tracesets.jsontext import JsonValue

#: The options that declare a rank count, for messages that ask for one.
RANK_FLAGS: Final = (
    "--rank-count N, or the parallelism degrees --dp, --tp, --sp, --ep, --pp "
    "(their product), or both"
)
IGNORE_FLAG: Final = options.IGNORE_FLAG


def upload(
    paths: options.Paths,
    name: options.Name = None,
    description: options.Description = None,
    rank_count: options.RankCount = None,
    dp: options.Dp = None,
    tp: options.Tp = None,
    sp: options.Sp = None,
    ep: options.Ep = None,
    pp: options.Pp = None,
    cp: options.Cp = None,
    fsdp: options.Fsdp = None,
    sets: options.Sets = None,
    metadata_file: options.MetadataFile = None,
    supporting: options.Supporting = None,
    resume: options.Resume = None,
    infer_rank_count: options.InferRankCount = False,
    ignore_trace_ranks: options.IgnoreTraceRanks = False,
    concurrency: options.Concurrency = 8,
    job_key: options.JobKey = None,
    rank: options.Rank = None,
    world_size: options.WorldSize = None,
    as_json: options.Json = False,
    url: options.Url = None,
    token: options.Token = None,
) -> None:
    """Upload files or folders as one traceset, with a progress bar; print the traceset.

    The request is checked with the service's own rules before anything is sent.
    """
    degrees = {"dp": dp, "tp": tp, "sp": sp, "ep": ep, "pp": pp}
    if rank is not None or world_size is not None or job_key is not None:
        return upload_one_rank(
            paths,
            job_key=job_key,
            rank=rank,
            world_size=world_size,
            degrees=degrees,
            name=name,
            url=url,
            token=token,
        )
    options.check_token(token)
    base = metadata.read_file(metadata_file) if metadata_file is not None else None
    workload_metadata = metadata.build(
        base, rank_count=rank_count, degrees={**degrees, "cp": cp, "fsdp": fsdp}, sets=sets or ()
    )
    files = collect(paths, supporting or ())  # the one walk of the folders
    warnings: list[str] = []
    with options.client(url, token, concurrency=concurrency) as client:
        if resume is not None:
            traceset = _send(files, "resuming", partial(client.resume_files_answer, resume, files))
        else:
            workload_metadata, warnings = check_against_traces(
                files, workload_metadata, infer=infer_rank_count, ignore=ignore_trace_ranks
            )
            named = paths[0].resolve().name if name is None else name
            plan = _plan(files, named, workload_metadata, description)
            traceset = _send(files, "uploading", partial(client.upload_plan_answer, plan))
    _report(traceset, warnings, as_json=as_json)


def _plan(
    files: list[LocalFile], name: str, workload_metadata: JsonValue, description: str | None
) -> UploadPlan:
    """The very same rules as the service, once, before a byte is read or a request sent."""
    try:
        return UploadPlan.checked(
            files, name=name, workload_metadata=workload_metadata, description=description
        )
    except ClientError as error:
        _refuse(error)


def _send(files: list[LocalFile], verb: str, send: Callable[..., TracesetAnswer]) -> TracesetAnswer:
    """``send(progress=…, hash_progress=…)``, its progress shown."""
    with display(verb, "uploaded", len(files), total_size(files), hashing=True) as shown:
        return send(progress=shown.moved, hash_progress=shown.hashed, files_progress=shown.files)


def _report(traceset: TracesetAnswer, warnings: list[str], *, as_json: bool) -> None:
    say(json_text(traceset) if as_json else summary(traceset))
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


class Summarized(Protocol):
    """What the one-line summary reads: a ``Traceset`` or a ``TracesetAnswer``."""

    @property
    def id(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def fileCount(self) -> int: ...  # noqa: N802 (the wire name)
    @property
    def fileBytes(self) -> int: ...  # noqa: N802 (the wire name)
    @property
    def rankCountDerived(self) -> int | None: ...  # noqa: N802 (the wire name)


def summary(traceset: Summarized) -> str:
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
