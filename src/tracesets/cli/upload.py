"""``tracesets upload``: files or folders → one traceset, checked locally first."""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import partial
from typing import Final, NoReturn, Protocol

import typer

from tracesets import workload
from tracesets.cli import metadata, options
from tracesets.cli.job import upload_one_rank
from tracesets.cli.output import REFUSED, error_lines, fail_usage, json_text, say, size, warn
from tracesets.cli.progress import display
from tracesets.client import ClientError
from tracesets.client.answers import TracesetAnswer
from tracesets.client.core import UploadPlan
from tracesets.client.files import LocalFile, collect, total_size
from tracesets.client.traceranks import RankCountContradicted, read_findings, summarized
from tracesets.inspection import FileFinding
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
    baseline: options.Baseline = None,
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
        if baseline is not None:  # the job's traceset is made by whichever rank comes first
            fail_usage("--baseline names the baseline of a whole upload; it cannot go with --rank")
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
            workload_metadata, warnings, findings = check_against_traces(
                files, workload_metadata, infer=infer_rank_count
            )
            named = paths[0].resolve().name if name is None else name
            plan = _plan(
                files, named, workload_metadata, description, ignore_trace_ranks, findings, baseline
            )
            for warning in plan.trace_warnings:
                warn(f"warning: {warning}")
            warnings += plan.trace_warnings
            traceset = _send(files, "uploading", partial(client.upload_plan_answer, plan))
    _report(traceset, warnings, as_json=as_json)


def _plan(
    files: list[LocalFile],
    name: str,
    workload_metadata: JsonValue,
    description: str | None,
    ignore_trace_ranks: bool,
    findings: list[FileFinding] | None,
    baseline: str | None = None,
) -> UploadPlan:
    """The very same rules as the service, and the traces' ranks against the declared
    rank count as the Python client checks them, before a byte is read or a request sent."""
    try:
        return UploadPlan.checked(
            files,
            name=name,
            workload_metadata=workload_metadata,
            description=description,
            ignore_trace_ranks=ignore_trace_ranks,
            findings=findings,
            baseline_id=baseline,
        )
    except RankCountContradicted as contradiction:
        first, *rest = contradiction.lines(
            declare_with="--rank-count, or the parallelism degrees", override=IGNORE_FLAG
        )
        warn(f"error: {first}")
        for line in rest:
            warn(line)
        raise typer.Exit(REFUSED) from None
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
    files: list[LocalFile], workload_metadata: JsonValue, *, infer: bool
) -> tuple[JsonValue, list[str], list[FileFinding] | None]:
    """With no rank count declared, read the traces' own ranks before sending a byte, and
    propose the world size they agree on (or declare it with ``--infer-rank-count``).

    Returns the metadata to send, the warnings said, and the findings when read: with a
    rank count declared, ``UploadPlan.checked`` reads them, and refuses traces that
    contradict it, as the Python client does.
    """
    rules = workload.check_rank_count(workload_metadata, has_primary_files=False)
    if rules.problems or rules.rank_count is not None:
        return workload_metadata, [], None  # refused by the rules, or checked by the plan
    findings = read_findings(files)
    if not findings:
        return workload_metadata, [], findings
    found = summarized(findings, None)
    if infer and found.world_size is None:
        sizes = ", ".join(f"{size:,}" for size in found.world_sizes)
        why = (
            f"the traces disagree on the world size ({sizes})"
            if sizes
            else "no trace gives its world size"
        )
        warn(f"error: --infer-rank-count: {why}; declare the rank count with {RANK_FLAGS}")
        raise typer.Exit(REFUSED)
    if found.world_size is not None:
        if infer and isinstance(workload_metadata, dict | None):
            shape = dict((workload_metadata or {}).get("shape") or {})
            shape["rankCount"] = found.world_size
            warn(f"declaring shape.rankCount = {found.world_size}: the world size the traces hold")
            return {**(workload_metadata or {}), "shape": shape}, [], findings
        proposal = (
            f"The traces say the world size is {found.world_size}: declare it with "
            f"--rank-count {found.world_size}, or let --infer-rank-count do it."
        )
        warn(proposal)
        return workload_metadata, [proposal], findings
    for warning in found.warnings:
        warn(f"warning: {warning}")
    return workload_metadata, found.warnings, findings


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
