"""Checks across ranks on generated runs with known defects."""

from __future__ import annotations

from dataclasses import replace

from tests.analysis.run_writer import Run, rank_trace
from tracesets.analysis import RankAnalysis, analyze_file
from tracesets.analysis.checks import check_ranks, declared_parallelism
from tracesets.inspection import BytesSource


def analysed(run: Run) -> dict[int, RankAnalysis]:
    by_rank = {}
    for rank in range(run.world):
        (found,) = analyze_file(f"rank-{rank}.json", BytesSource(rank_trace(run, rank)))
        by_rank[rank] = found.analysis
    return by_rank


def test_a_healthy_run_raises_nothing() -> None:
    run = Run(tp=2, dp=3, steps=4, seed=5)
    checks = check_ranks(analysed(run), parallelism={"tp": 2, "dp": 3}, world_size=6)
    assert checks.warnings == []
    assert (checks.stragglers, checks.desynced_groups) == ([], [])


def test_a_lost_collective_names_its_group_and_ranks() -> None:
    run = Run(tp=2, dp=3, steps=4, skip={3: 2})
    checks = check_ranks(analysed(run), world_size=6)
    name, members = run.dp_group(3)
    assert members == [1, 3, 5]
    assert checks.desynced_groups == [name]
    assert checks.warnings == [
        f"Process group {name} (3 ranks, dp: 1, 3, 5): its members issued allreduce different "
        "numbers of times: 4 times by ranks 1, 5; 3 times by rank 3."
    ]


def test_a_straggler_is_named_with_its_figure() -> None:
    run = Run(tp=2, dp=3, steps=4, slow={4: 1.6}, seed=2)
    by_rank = analysed(run)
    checks = check_ranks(by_rank, world_size=6)
    assert checks.stragglers == [4]
    (sentence,) = checks.warnings
    median = by_rank[4].steps.median_us
    assert median is not None
    assert sentence.startswith(f"Rank 4 straggles: its median step takes {median / 1000:,.1f} ms")


def test_two_ranks_are_too_few_to_call_one_a_straggler() -> None:
    checks = check_ranks(analysed(Run(tp=2, dp=1, steps=3, slow={1: 3.0})), world_size=2)
    assert checks.stragglers == []


def test_declared_degrees_against_the_process_groups() -> None:
    by_rank = analysed(Run(tp=2, dp=3, steps=2))
    assert (
        check_ranks(by_rank, parallelism={"tp": 2, "dp": 3, "pp": 1}, world_size=6).warnings == []
    )
    assert check_ranks(by_rank, parallelism={"pp": 4}, world_size=6).warnings == [
        "The workload metadata declares pp = 4, but the traces have no process group of 4 "
        "ranks (their groups have 2, 3, 6 ranks)."
    ]
    # Ranks 4 and 5 ran without their tensor-parallel group.
    for rank in (4, 5):
        kept = [g for g in by_rank[rank].collectives if g.ranks != [4, 5]]
        by_rank[rank] = replace(by_rank[rank], collectives=kept)
    assert check_ranks(by_rank, parallelism={"tp": 2, "dp": 3}, world_size=6).warnings == [
        "The workload metadata declares tp = 2, but the process groups of 2 ranks leave out "
        "2 of the 6 ranks traced: 4-5."
    ]


def test_declared_parallelism_is_read_from_the_metadata() -> None:
    assert declared_parallelism({"parallelism": {"tp": 8}}) == {"tp": 8}
    assert declared_parallelism({"parallelism": None}) == {}
    assert declared_parallelism(None) == {}
