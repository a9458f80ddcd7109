"""The traceset against its declared rank count: one readable sentence per disagreement."""

from __future__ import annotations

from tracesets.inspection import FileFinding, summarize
from tracesets.inspection.summary import MAX_LISTED_RANKS, ranks_text


def trace(
    rank: int | None,
    world_size: int | None = 8,
    *,
    file: str | None = None,
    problem: str | None = None,
    readable: bool = True,
) -> FileFinding:
    return FileFinding(
        file=file or f"rank{rank}.json",
        member=None,
        format="kineto-json" if readable else "unknown",
        size=1000,
        rank=rank,
        world_size=world_size,
        backend="nccl",
        rank_source="header" if rank is not None else None,
        problem=problem,
        readable=readable,
    )


def test_every_rank_present_and_agreeing_says_nothing() -> None:
    summary = summarize([trace(r) for r in range(8)], declared_rank_count=8)
    assert (summary.ranks_found, summary.world_sizes, summary.world_size) == (
        list(range(8)),
        [8],
        8,
    )
    assert summary.missing_ranks == summary.duplicate_ranks == []
    assert summary.unreadable == []
    assert summary.warnings == []


def test_missing_ranks_count_from_the_declared_rank_count() -> None:
    summary = summarize([trace(r, 16) for r in (0, 1, 2, 5)], declared_rank_count=16)
    assert summary.missing_ranks == [3, 4, *range(6, 16)]
    assert summary.warnings == ["12 of 16 declared ranks have no trace: 3-4, 6-15."]


def test_without_a_declaration_missing_ranks_count_from_the_world_size() -> None:
    summary = summarize([trace(0, 4)], declared_rank_count=None)
    assert summary.missing_ranks == [1, 2, 3]
    assert summary.warnings == ["3 of the 4 ranks of the traces' world size have no trace: 1-3."]


def test_only_rank_0_profiled_is_normal_but_said() -> None:
    summary = summarize([trace(0, 256)], declared_rank_count=256)
    assert summary.warnings == ["255 of 256 declared ranks have no trace: 1-255."]


def test_a_world_size_that_is_not_the_declared_rank_count() -> None:
    summary = summarize([trace(r, 8) for r in range(8)], declared_rank_count=16)
    assert summary.warnings == [
        "8 traces say the world size is 8, but the workload metadata declares 16 ranks.",
        "8 of 16 declared ranks have no trace: 8-15.",
    ]


def test_ranks_beyond_the_declared_count() -> None:
    summary = summarize([trace(r, 32) for r in range(0, 32, 4)], declared_rank_count=16)
    assert "4 of the ranks found are not below the 16 declared ranks: 16, 20, 24, 28." in (
        summary.warnings
    )


def test_traces_that_disagree_on_the_world_size() -> None:
    summary = summarize([trace(0, 8), trace(1, 8), trace(2, 16)], declared_rank_count=8)
    assert summary.world_sizes == [8, 16] and summary.world_size is None
    assert summary.warnings[:2] == [
        "1 trace says the world size is 16, but the workload metadata declares 8 ranks.",
        "The traces disagree on the world size: 8 (2 traces), 16 (1 trace).",
    ]


def test_duplicates_unreadable_and_unknown_ranks_each_have_a_sentence() -> None:
    findings = [
        trace(0, file="a.json"),
        trace(0, file="b.json"),
        trace(None, None, file="c.json", problem="distributedInfo has no rank"),
        trace(None, None, file="d.json", problem="the file is empty", readable=False),
        trace(9, file="e.json", problem="rank 9 is not below the world size 8"),
    ]
    summary = summarize(findings, declared_rank_count=None)
    assert summary.duplicate_ranks == [0]
    assert summary.unreadable == ["d.json"]
    assert summary.warnings == [
        "1 of the ranks found is not below the world size of 8 the traces give: 9.",
        "7 of the 8 ranks of the traces' world size have no trace: 1-7.",
        "Rank 0 has 2 traces: a.json, b.json.",
        "d.json could not be read: the file is empty.",
        "c.json does not say its rank: distributedInfo has no rank.",
        "e.json: rank 9 is not below the world size 8.",
    ]


def test_many_files_are_named_ten_at_a_time() -> None:
    findings = [trace(r % 3, file=f"t{r}.json") for r in range(30)]
    findings += [trace(None, file=f"u{n}.json", problem="empty", readable=False) for n in range(25)]
    warnings = summarize(findings, declared_rank_count=3).warnings
    assert "15 more files could not be read." in warnings
    assert sum(w.startswith("Rank ") for w in warnings) == 3


def test_a_rank_with_very_many_traces_names_ten() -> None:
    warnings = summarize(
        [trace(0, 1, file=f"t{n}.json") for n in range(40)], declared_rank_count=1
    ).warnings
    assert warnings == [
        "Rank 0 has 40 traces: " + ", ".join(f"t{n}.json" for n in range(10)) + " and 30 more."
    ]


def test_a_huge_declared_rank_count_stays_small() -> None:
    summary = summarize([trace(0, 8), trace(1, 8)], declared_rank_count=2_147_483_647)
    assert len(summary.missing_ranks) == MAX_LISTED_RANKS
    assert summary.missing_rank_count == 2_147_483_645
    assert "2,147,483,645 of 2,147,483,647 declared ranks have no trace: 2-2,147,483,646." in (
        summary.warnings
    )


def test_no_traces_at_all() -> None:
    summary = summarize([], declared_rank_count=2)
    assert summary.missing_ranks == [0, 1]
    assert summary.warnings == [
        "No traces were found in the traceset's files.",
        "2 of 2 declared ranks have no trace: 0-1.",
    ]


def test_ranks_text_shows_runs_then_how_many_more() -> None:
    assert ranks_text([0, 1, 2, 3, 5, 7, 8]) == "0-3, 5, 7-8"
    assert (
        ranks_text(list(range(0, 100, 2)))
        == ", ".join(str(n) for n in range(0, 40, 2)) + " and 30 more"
    )
    assert ranks_text([1000, 1001]) == "1,000-1,001"
