"""The worst answers the rules allow, rendered: each stays under 8 MiB.

Built in memory (no service): a traceset of 10,000 files whose 1,024-byte names are all
control characters (six bytes each once escaped), 64 KiB of metadata, and an inspection
of 40,000 unreadable archive members with every rank missing and a warning per world size;
and ranks whose kernel figures are as large as the analysis makes them.
"""

from __future__ import annotations

from datetime import UTC, datetime

import orjson

from tracesets.analysis.checks import Checks
from tracesets.analysis.files import TraceAnalysis
from tracesets.analysis.kernel_spread import kernel_spread
from tracesets.analysis.kernel_stats import (
    IN_KERNEL_CATEGORY,
    LAUNCHED,
    MAX_NAME_CHARS,
    MAX_STREAMS,
    TOP,
    KernelFold,
)
from tracesets.analysis.rank import RankAnalysis, Steps
from tracesets.analysis.report import TracesetAnalysis, rank_json
from tracesets.api import render
from tracesets.inspection import FileFinding, summarize
from tracesets.inspection.report import result_json
from tracesets.records import InspectionRecord, StoredFile, Traceset
from tracesets.service.catalog import rank_page_of
from tracesets.service.cursors import CursorKind, decode_cursor
from tracesets.service.targets import UploadTarget
from tracesets.storage.base import PartTarget, UploadPlan

BOUND = 8 * 1024 * 1024
#: Ranks of the largest kernel figures (half a megabyte each): several pages' worth.
RANKS = 64
NOW = datetime(2026, 12, 1, tzinfo=UTC)


def worst_inspection() -> InspectionRecord:
    findings = [
        FileFinding(
            file=f"{i:05d}" + "\x01" * 1_000,
            member="m" * 1_000,
            format="kineto-json",
            size=i,
            rank=i if i % 2 else None,
            world_size=i + 1,
            problem="p" * 200,
            readable=i % 3 != 0,
        )
        for i in range(40_000)
    ]
    summary = summarize(findings, declared_rank_count=2_000_000_000)
    return InspectionRecord("done", result_json(summary, findings))


def worst_traceset(inspection: InspectionRecord | None = None) -> Traceset:
    files = [
        StoredFile(i, f"{i:05d}" + "\x02" * 1_019, 5 * 1024**4, "primary", "a" * 64, None, False)
        for i in range(10_000)
    ]
    return Traceset(
        seq=1,
        id="t" * 32,
        workspace="w",
        name="\x03" * 256,
        description="\x04" * 16_384,
        status="ready",
        created_at=NOW,
        updated_at=NOW,
        promoted_at=None,
        workload_metadata=b'{"notes":"' + b"m" * 65_500 + b'"}',
        rank_count=2_000_000_000,
        files=files,
        inspection=inspection,
    )


def test_one_traceset_with_its_inspection_stays_under_8_mib() -> None:
    record = worst_inspection()
    assert record.result is not None and len(record.result) > 50 * 1024 * 1024
    traceset = worst_traceset(record)
    answer = orjson.dumps(render.traceset(traceset))
    assert len(answer) < BOUND
    got = orjson.loads(answer)
    assert got["fileCount"] == 10_000 and got["fileBytes"] == 10_000 * 5 * 1024**4
    assert 0 < len(got["files"]) < 1_000
    assert decode_cursor(got["filesNextCursor"], CursorKind.FILES) == len(got["files"])
    inspection = got["inspection"]
    assert inspection["truncated"] is True
    assert inspection["missingRankCount"] == orjson.loads(record.result)["missingRankCount"]
    assert 0 < len(inspection["files"]) < 40_000


def test_paging_the_worst_files_visits_each_once_and_each_page_is_bounded() -> None:
    files = worst_traceset().files
    seen: list[int] = []
    start = 0
    while True:
        page = orjson.dumps(render.file_list(files[start : start + 1_001], 1_000))
        assert len(page) < BOUND
        body = orjson.loads(page)
        seen += [int(f["name"][:5]) for f in body["items"]]
        if body["nextCursor"] is None:
            break
        start = decode_cursor(body["nextCursor"], CursorKind.FILES)
    assert seen == list(range(10_000))


def test_a_small_inspection_goes_out_as_stored() -> None:
    findings = [FileFinding(file="rank0.json", member=None, format="kineto-json", size=1, rank=0)]
    result = result_json(summarize(findings, declared_rank_count=1), findings)
    shown = orjson.loads(orjson.dumps({"i": render.inspection(InspectionRecord("done", result))}))
    assert shown["i"] == {"status": "done", "truncated": False, **orjson.loads(result)}
    pending = orjson.loads(
        orjson.dumps({"i": render.inspection(InspectionRecord("running", None))})
    )
    assert pending["i"]["status"] == "pending" and pending["i"]["files"] == []


def test_warnings_are_cut_to_their_budget() -> None:
    warnings = [f"warning {i}: " + "w" * 1_000 for i in range(10_000)]
    kept, cut = render.within(warnings, render.INSPECTION_LIST_BYTES)
    assert cut and kept == warnings[: len(kept)]
    assert len(orjson.dumps(kept)) <= render.INSPECTION_LIST_BYTES
    assert render.within(["a", "b"], 100) == (["a", "b"], False)


def test_upload_answers_stop_within_their_bound_and_say_where_the_status_goes_on() -> None:
    """10,000 files in 1,000 parts each, every part URL as long as S3's: the answer keeps
    whole entries up to its bound and names the first file left out."""
    url = "https://bucket.s3.example/" + "k" * 600
    parts = [
        PartTarget(n, url, 5 * 1024**2, {"x-amz-checksum-sha256": "c" * 44})
        for n in range(1, 1_001)
    ]
    expires = datetime(2026, 12, 2, tzinfo=UTC)
    targets = [
        UploadTarget(
            f"rank{i}.json",
            "primary",
            UploadPlan(expires, upload_id="u", part_size=5 * 1024**2, parts=parts),
            idx,
        )
        for i, idx in enumerate(range(7, 10_007))
    ]
    answer = orjson.dumps(render.upload_targets("t", targets))
    assert len(answer) < BOUND
    got = orjson.loads(answer)
    assert 1 <= len(got["uploads"]) < len(targets)
    assert all(len(entry["parts"]) == 1_000 for entry in got["uploads"])
    left = targets[len(got["uploads"])]
    assert decode_cursor(got["uploadsNextCursor"], CursorKind.UPLOADS) == left.idx
    # An ordinary answer keeps the contract's shape: every entry, no cursor.
    few = orjson.loads(orjson.dumps(render.upload_targets("t", targets[:3])))
    assert [e["name"] for e in few["uploads"]] == ["rank0.json", "rank1.json", "rank2.json"]
    assert set(few) == {"tracesetId", "uploads"}


def worst_kernels() -> RankAnalysis:
    """A rank's figures as large as the analysis makes them: kernel names of 5,000 control
    characters (cut to 1,024, six bytes each once escaped), 21 top kernels, 16 streams."""
    fold = KernelFold()
    for i in range(TOP + 5):
        number = fold.name(f"{i:02d}" + "\x05" * 5_000, 2)
        for stream in range(MAX_STREAMS + 4):
            start = 1_000.0 * i + 10.0 * stream
            code = 2 | IN_KERNEL_CATEGORY | LAUNCHED
            fold.add(start, start + 5, start - 20, code, number, stream, 4.0)
    stats = fold.result([0.0, 0.0, 0.0, 0.0, 5.0, 0.0, 0.0, 0.0])
    assert len(stats.top) == TOP + 1 and len(stats.idle) == MAX_STREAMS
    return RankAnalysis(7, Steps(0, None, None, None), None, [], kernels=stats)


def test_many_ranks_of_the_largest_kernel_figures_stay_under_8_mib() -> None:
    """GET embeds the first 256 ranks and the kernels' spread, cut past its budget; a page
    of the per-rank route (up to 1,000 ranks) stops before its bound, and paging visits
    every rank once. A rank's figures this large pass the inspection's list budget alone:
    GET shows none of them, and says so."""
    analysis = worst_kernels()
    ranks = [
        rank_json(rank, TraceAnalysis(f"{rank:05d}" + "\x06" * 1_019, None, analysis))
        for rank in range(RANKS)
    ]
    assert all(len(k["name"]) == MAX_NAME_CHARS for k in ranks[0]["topKernels"][:TOP])
    spread = kernel_spread(dict.fromkeys(range(RANKS), analysis))
    assert len(spread) == TOP and all(k.ranks == RANKS for k in spread)
    findings = [
        FileFinding(file=f"r{i}", member=None, format="kineto-json", size=1, rank=i)
        for i in range(RANKS)
    ]
    inline = TracesetAnalysis(ranks, Checks(), spread).inline()
    record = InspectionRecord(
        "done", result_json(summarize(findings, declared_rank_count=None), findings, inline)
    )
    answer = orjson.dumps(render.traceset(worst_traceset(record)))
    assert len(answer) < BOUND
    shown = orjson.loads(answer)["inspection"]
    assert shown["truncated"] is True and shown["perRankCount"] == RANKS
    assert shown["perRank"] == [] and 0 < len(shown["kernelSpread"]) < TOP

    stored = [(position, orjson.dumps(r).decode()) for position, r in enumerate(ranks)]
    seen: list[int] = []
    after = -1
    while True:
        rows = [row for row in stored if row[0] > after][:1_001]
        items, cursor = rank_page_of(rows, 1_000)
        page = orjson.dumps({"items": [orjson.Fragment(i) for i in items], "nextCursor": cursor})
        assert len(page) < BOUND and items
        seen += [orjson.loads(i)["rank"] for i in items]
        if cursor is None:
            break
        after = decode_cursor(cursor, CursorKind.RANKS) - 1
    assert seen == list(range(RANKS))
