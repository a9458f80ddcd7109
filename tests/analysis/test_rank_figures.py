"""Per-rank figures of hand-built traces whose answers are known, in every container.

One small trace, worked out by hand: three steps (the last one's GPU work dropped, as HTA
drops it), a matmul overlapping half of an all-reduce, a copy, a kernel nobody launched.
"""

from __future__ import annotations

import gzip
import io
import json
import tarfile
import zipfile
from pathlib import Path
from typing import Any

import pytest

from tests.analysis.run_writer import Run, rank_trace
from tracesets.analysis import RankAnalysis, analyze_file
from tracesets.analysis.kernel_stats import StreamIdle
from tracesets.inspection import BytesSource, FileSource


def cpu(name: str, ts: int, dur: int, **args: Any) -> dict[str, Any]:
    return {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": dur,
            "args": args}  # fmt: skip


def launch(ts: int, correlation: int) -> dict[str, Any]:
    return {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
            "ts": ts, "dur": 5, "args": {"correlation": correlation}}  # fmt: skip


def kernel(name: str, ts: int, dur: int, correlation: int, stream: int) -> dict[str, Any]:
    return {"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": stream, "ts": ts,
            "dur": dur, "args": {"stream": stream, "correlation": correlation}}  # fmt: skip


def allreduce(group: str) -> dict[str, Any]:
    return {"Collective name": "allreduce", "dtype": "Float", "In msg nelems": 1000,
            "Process Group Name": group, "Process Group Ranks": "[0, 1]"}  # fmt: skip


EVENTS = [
    cpu("ProfilerStep#1", 0, 1000),
    launch(10, 1),
    launch(20, 2),
    launch(30, 3),
    cpu("record_param_comms", 25, 3, **allreduce("1")),
    cpu("ProfilerStep#2", 1000, 1000),
    launch(1010, 4),
    cpu("record_param_comms", 1025, 3, **allreduce("1")),
    cpu(
        "record_param_comms", 1030, 3, **{"Collective name": "broadcast", "Process Group Name": "0"}
    ),
    cpu("ProfilerStep#3", 2000, 500),
    launch(2010, 5),
    cpu("record_param_comms", 2025, 3, **allreduce("1")),
    kernel("ampere_sgemm_128x64_tn", 100, 400, 1, 7),
    kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 300, 400, 2, 20),
    kernel("Memcpy HtoD (Pageable -> Device)", 800, 100, 3, 24),
    kernel("ampere_sgemm_128x64_tn", 1100, 200, 4, 7),
    kernel("ampere_sgemm_128x64_tn", 2100, 5000, 5, 7),  # launched in the last step
    kernel("ampere_sgemm_128x64_tn", 1500, 100, 99, 7),  # launched before profiling began
    {"name": "Record Window End", "ph": "i", "s": "g", "pid": "", "tid": "", "ts": 2600},
]
INFO = {"rank": 0, "world_size": 2, "pg_config": [
    {"pg_name": "0", "pg_desc": "default_pg", "pg_size": 2, "ranks": [0, 1]},
    {"pg_name": "1", "pg_desc": "tp", "pg_size": 2, "ranks": [0, 1]},
    {"pg_name": "7", "pg_desc": "unused", "pg_size": 2, "ranks": "[0, 1]"}]}  # fmt: skip


def trace(*, tail: bool = False, indent: int | None = None) -> bytes:
    document: dict[str, Any] = {"schemaVersion": 1}
    if not tail:
        document["distributedInfo"] = INFO
    document["traceEvents"] = EVENTS
    if tail:
        document["distributedInfo"] = INFO
    document["traceName"] = "t"
    return json.dumps(document, indent=indent).encode()


def only(name: str, data: bytes) -> RankAnalysis:
    (found,) = analyze_file(name, BytesSource(data))
    return found.analysis


def assert_known(result: RankAnalysis) -> None:
    assert result.problem is None
    assert result.events == len(EVENTS)
    assert (result.steps.count, result.steps.min_us) == (3, 500)
    assert (result.steps.median_us, result.steps.max_us) == (1000, 1000)
    gpu = result.gpu
    assert gpu is not None
    assert (gpu.kernel_us, gpu.idle_us, gpu.compute_us, gpu.non_compute_us) == (1200, 300, 600, 300)
    assert (gpu.idle_pct, gpu.compute_pct, gpu.non_compute_pct) == (25.0, 50.0, 25.0)
    assert (gpu.communication_us, gpu.memory_us, gpu.other_us) == (200, 100, 0)
    assert gpu.overlap_pct == 50.0
    assert gpu.kernels == 4
    groups = {g.name: g for g in result.collectives}
    assert sorted(groups) == ["0", "1", "7"]
    assert groups["1"].ranks == [0, 1]
    assert groups["1"].description == "tp"
    assert (groups["1"].ops["allreduce"].count, groups["1"].ops["allreduce"].bytes) == (3, 12000)
    assert (groups["0"].ops["broadcast"].count, groups["0"].ops["broadcast"].bytes) == (1, None)
    assert groups["7"].ops == {}
    assert groups["7"].ranks == [0, 1]


def _zip(data: bytes, method: int) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=method) as archive:
        archive.writestr("traces/rank-0.json", data)
        archive.writestr("README.txt", b"not a trace")
    return out.getvalue()


def _tar(data: bytes, mode: str) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode=mode) as archive:  # type: ignore[call-overload]
        info = tarfile.TarInfo("rank-0.json.gz")
        packed = gzip.compress(data)
        info.size = len(packed)
        archive.addfile(info, io.BytesIO(packed))
    return out.getvalue()


@pytest.mark.parametrize(
    "name, data",
    [
        ("t.json", trace()),
        ("t.json", trace(indent=2)),
        ("t.json", trace(tail=True)),
        ("t.json.gz", gzip.compress(trace(tail=True, indent=1))),
        ("t.zip", _zip(trace(), zipfile.ZIP_DEFLATED)),
        ("t.zip", _zip(trace(), zipfile.ZIP_STORED)),
        ("t.tar", _tar(trace(), "w")),
        ("t.tar.gz", _tar(trace(tail=True), "w:gz")),
    ],
    ids=["compact", "pretty", "tail", "gzip", "zip", "zip-stored", "tar-of-gzip", "tar-gz"],
)
def test_the_known_answers_in_every_container(name: str, data: bytes) -> None:
    assert_known(only(name, data))


def test_without_two_profiler_steps_nothing_is_dropped() -> None:
    events = [e for e in EVENTS if e["name"] not in ("ProfilerStep#2", "ProfilerStep#3")]
    result = only("t.json", json.dumps({"traceEvents": events}).encode())
    assert result.steps.count == 1
    assert result.gpu is not None
    assert result.gpu.kernels == 6  # the late kernel and the unlaunched one are kept too
    assert result.gpu.kernel_us == 7100 - 100


def test_nanosecond_timestamps_are_rounded_inwards_as_hta_rounds_them() -> None:
    events = [kernel("ampere_sgemm_128x64_tn", 0, 0, 1, 7) | {"ts": 10.2, "dur": 4.5},
              kernel("ncclDevKernel_AllReduce", 0, 0, 2, 20) | {"ts": 12.9, "dur": 9.0}]  # fmt: skip
    gpu = only("t.json", json.dumps({"traceEvents": events}).encode()).gpu
    assert gpu is not None  # [11, 14] and [13, 21]
    assert (gpu.kernel_us, gpu.compute_us, gpu.idle_us, gpu.overlap_pct) == (10, 3, 0, 12.5)


def test_a_gloo_run_reports_steps_and_collectives_without_gpu_time() -> None:
    run = Run(tp=2, dp=2, steps=3, cpu_only=True)
    result = only("rank-3.json", rank_trace(run, 3))
    assert result.problem is None
    assert result.gpu is None
    assert result.steps.count == 3
    groups = {g.name: g for g in result.collectives}
    assert groups[run.tp_group(3)[0]].ops["allreduce"].count == 3 * 3
    assert groups[run.dp_group(3)[0]].ops["allreduce"].count == 3
    assert groups["0"].ranks == [0, 1, 2, 3]


def test_a_trace_with_no_events() -> None:
    result = only("t.json", b'{"traceEvents": [ ], "distributedInfo": {"rank": 0}}')
    assert (result.problem, result.events, result.steps.count, result.gpu) == (None, 0, 0, None)


def test_files_that_are_not_traces_are_left_to_inspection(tmp_path: Path) -> None:
    assert analyze_file("a.txt", BytesSource(b"hello")) == []
    assert analyze_file("a.zip", BytesSource(b"PK\x03\x04 broken")) == []
    (found,) = analyze_file("a.json", BytesSource(b'{"nodes": [], "schema": "1"}'))
    assert found.analysis.problem == "not a PyTorch profiler trace: it has no traceEvents"


def test_launches_out_of_correlation_order_give_the_same_answers() -> None:
    events = list(EVENTS)
    first, second = events.index(launch(10, 1)), events.index(launch(2010, 5))
    events[first], events[second] = events[second], events[first]
    document = {"distributedInfo": INFO, "traceEvents": events}
    assert_known(only("t.json", json.dumps(document).encode()))


@pytest.mark.parametrize(
    ("host", "kernel", "other", "shares"),
    [
        (30.0, 10.0, 60.0, (30.0, 10.0, 60.0)),
        (1.0, 1.0, 1.0, (33.33, 33.33, 33.33)),  # in %, two decimals
        (50.0, -10.0, 60.0, (50.0, -10.0, 60.0)),  # a negative kernel wait counts, as HTA's
        (0.0, 0.0, 0.0, None),  # a stream never idle: no share means anything
        (0.0, -5.0, 0.0, None),  # idle time that is not positive: neither
    ],
)
def test_each_idle_causes_share_of_its_streams_idle_time(
    host: float, kernel: float, other: float, shares: tuple[float, float, float] | None
) -> None:
    assert StreamIdle(7, host, kernel, other).shares() == shares


def test_launch_quantiles_are_to_the_nanosecond_as_every_other_time() -> None:
    path = Path(__file__).resolve().parents[1] / "data" / "traces" / "sampled_rank-0.json.gz"
    (trace,) = analyze_file(path.name, FileSource(path))
    assert trace.analysis.kernels is not None
    launch = trace.analysis.kernels.launches
    quantiles = [launch.cpu_median_us, launch.cpu_p95_us, launch.gpu_median_us,
                 launch.gpu_p95_us, launch.delay_median_us, launch.delay_p95_us]  # fmt: skip
    assert launch.launches and None not in quantiles
    assert quantiles == [round(q or 0, 3) for q in quantiles]
    assert any(q != int(q or 0) for q in quantiles)  # interpolated: not whole µs
