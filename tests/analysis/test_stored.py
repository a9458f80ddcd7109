"""A file's findings and figures come back from their stored JSON exactly as they were."""

from __future__ import annotations

from tests.analysis.run_writer import Run, rank_trace
from tests.inspection.kineto_writer import gzipped
from tracesets.analysis import analyze_file
from tracesets.analysis.stored import dumps, loads
from tracesets.inspection import BytesSource, inspect_file


def test_findings_and_figures_round_trip_through_their_stored_json() -> None:
    run = Run(tp=2, dp=2, steps=3, skip={1: 1}, fractional=True)
    for rank in range(run.world):
        source = BytesSource(gzipped(rank_trace(run, rank)))
        findings = inspect_file(f"rank-{rank}.json.gz", source)
        traces = analyze_file(f"rank-{rank}.json.gz", source)
        assert traces[0].analysis.gpu is not None and traces[0].analysis.collectives
        assert loads(dumps(findings, traces)) == (findings, traces)


def test_a_cpu_only_trace_and_a_file_that_is_no_trace_round_trip() -> None:
    cpu = BytesSource(rank_trace(Run(cpu_only=True), 0))
    findings, traces = inspect_file("cpu.json", cpu), analyze_file("cpu.json", cpu)
    assert traces[0].analysis.gpu is None
    assert loads(dumps(findings, traces)) == (findings, traces)
    junk = BytesSource(b"not a trace")
    findings = inspect_file("junk.bin", junk)
    assert findings[0].problem and not findings[0].readable
    assert loads(dumps(findings, analyze_file("junk.bin", junk))) == (findings, [])
