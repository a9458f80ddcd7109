"""Per-rank figures as the API and ``tracesets inspect --json`` show them (camelCase JSON).

A traceset's analysis joins each trace's figures to the rank inspection found for it
(its header, its tail or its file name), runs the checks across ranks, and gives the
inspection's JSON its per-rank members: the first ``INLINE_RANKS`` ranks inline, all of
them for the paged per-rank route, and each top kernel's spread over ranks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from tracesets.analysis.checks import Checks, check_ranks, unique_ranks
from tracesets.analysis.files import TraceAnalysis
from tracesets.analysis.gpu import GpuTime
from tracesets.analysis.kernel_spread import KernelSpread, kernel_spread
from tracesets.analysis.kernel_stats import KernelStats, StreamIdle
from tracesets.analysis.rank import GroupCollectives, RankAnalysis
from tracesets.inspection.findings import FileFinding

#: Ranks shown inside the inspection; the paged per-rank route has them all.
INLINE_RANKS: Final = 256


def gpu_json(gpu: GpuTime | None) -> dict[str, Any] | None:
    if gpu is None:
        return None
    return {
        "kernelUs": gpu.kernel_us,
        "idleUs": gpu.idle_us,
        "computeUs": gpu.compute_us,
        "nonComputeUs": gpu.non_compute_us,
        "idlePct": gpu.idle_pct,
        "computePct": gpu.compute_pct,
        "nonComputePct": gpu.non_compute_pct,
        "communicationUs": gpu.communication_us,
        "memoryUs": gpu.memory_us,
        "otherUs": gpu.other_us,
        "overlapPct": gpu.overlap_pct,
        "kernels": gpu.kernels,
    }


def _idle_json(idle: StreamIdle) -> dict[str, Any]:
    host, kernel, other = idle.shares() or (None, None, None)
    return {
        "stream": idle.stream,
        "hostWaitUs": idle.host_wait_us,
        "kernelWaitUs": idle.kernel_wait_us,
        "otherUs": idle.other_us,
        "hostWaitPct": host,
        "kernelWaitPct": kernel,
        "otherPct": other,
    }


def kernels_json(stats: KernelStats | None) -> dict[str, Any]:
    """The kernels' members of a rank's figures (empty lists and null without GPU time)."""
    if stats is None:
        return {"kernelTypes": [], "topKernels": [], "idleBreakdown": [], "launchStats": None}
    launch = stats.launches
    return {
        "kernelTypes": [{"type": t.type, "sumUs": t.sum_us, "pct": t.pct} for t in stats.types],
        "topKernels": [
            {"name": k.name, "type": k.type, "count": k.count, "sumUs": k.sum_us,
             "meanUs": k.mean_us, "minUs": k.min_us, "maxUs": k.max_us, "stddevUs": k.stddev_us}
            for k in stats.top
        ],
        "idleBreakdown": [_idle_json(s) for s in stats.idle],
        "launchStats": {
            "launches": launch.launches,
            "cpuMedianUs": launch.cpu_median_us, "cpuP95Us": launch.cpu_p95_us,
            "gpuMedianUs": launch.gpu_median_us, "gpuP95Us": launch.gpu_p95_us,
            "delayMedianUs": launch.delay_median_us, "delayP95Us": launch.delay_p95_us,
            "shortKernels": launch.short_kernels, "longDelays": launch.long_delays,
            "longRuntimes": launch.long_runtimes,
        },
    }  # fmt: skip


def _group_json(group: GroupCollectives) -> dict[str, Any]:
    return {
        "group": group.name,
        "description": group.description,
        "ranks": group.ranks,
        "ops": {op: {"count": c.count, "bytes": c.bytes} for op, c in sorted(group.ops.items())},
    }


def rank_json(rank: int | None, trace: TraceAnalysis, *, straggler: bool = False) -> dict[str, Any]:
    """One trace's figures, with ``rank`` beside them."""
    analysis: RankAnalysis = trace.analysis
    steps = analysis.steps
    return {
        "rank": rank,
        "file": trace.file,
        "member": trace.member,
        "events": analysis.events,
        "steps": {
            "count": steps.count,
            "minUs": steps.min_us,
            "medianUs": steps.median_us,
            "maxUs": steps.max_us,
        },
        "gpu": gpu_json(analysis.gpu),
        **kernels_json(analysis.kernels),
        "collectives": [_group_json(g) for g in analysis.collectives],
        "straggler": straggler,
        "problem": analysis.problem,
    }


@dataclass(frozen=True, slots=True)
class TracesetAnalysis:
    """Every trace's figures by rank (traces without a rank last), the checks, and the
    top kernels' spread over ranks."""

    ranks: list[dict[str, Any]]
    checks: Checks
    spread: list[KernelSpread]

    def inline(self) -> dict[str, Any]:
        """The members the inspection's JSON gains."""
        return {
            "perRank": self.ranks[:INLINE_RANKS],
            "perRankCount": len(self.ranks),
            "stragglers": self.checks.stragglers,
            "desyncedGroups": self.checks.desynced_groups,
            "kernelSpread": [kernel.json() for kernel in self.spread],
            "regression": None,  # the service's regression check fills it against a baseline
        }


def analyse_traceset(
    findings: Sequence[FileFinding],
    traces: Sequence[TraceAnalysis],
    *,
    parallelism: Mapping[str, object] | None = None,
    world_size: int | None = None,
) -> TracesetAnalysis:
    """Join each trace's figures to its rank, check the ranks together, and order them."""
    rank_of = {finding.label: finding.rank for finding in findings}
    pairs = [(rank_of.get(trace.label), trace) for trace in traces]
    by_rank = unique_ranks((rank, trace.analysis) for rank, trace in pairs)
    checks = check_ranks(by_rank, parallelism=parallelism, world_size=world_size)
    slow = set(checks.stragglers)
    pairs.sort(key=lambda pair: (pair[0] is None, pair[0] or 0, pair[1].label))
    ranks = [rank_json(rank, trace, straggler=rank in slow) for rank, trace in pairs]
    return TracesetAnalysis(ranks, checks, kernel_spread(by_rank))
