"""Per-rank GPU time agrees with Holistic Trace Analysis on real and generated traces.

HTA (``holistictraceanalysis``, a test dependency) loads each trace whole into pandas;
Tracesets reads it once as a stream. Both must give the same temporal breakdown, within
0.1 percentage point per rank, and the same communication/computation overlap, within
0.5. Where HTA cannot answer (a trace without GPU events crashes its breakdown),
Tracesets still gives the steps and collectives and says there is no GPU time.
"""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import pytest

from tests.analysis.accelerator_writer import write_accelerator_trace
from tests.analysis.hta_reference import hta_figures
from tests.analysis.run_writer import Run, write_run
from tracesets.analysis import analyze_file
from tracesets.analysis.gpu import GpuTime
from tracesets.inspection import FileSource

# HTA itself warns of pandas deprecations and of each trace it rounds; not ours to fix.
pytestmark = pytest.mark.filterwarnings("ignore::Warning:hta.*")

TRACES = Path(__file__).resolve().parents[1] / "data" / "traces"


def ours(path: Path) -> GpuTime:
    (trace,) = analyze_file(path.name, FileSource(path))
    assert trace.analysis.problem is None
    assert trace.analysis.gpu is not None
    return trace.analysis.gpu


def assert_agrees(gpu: GpuTime, hta: dict[str, float]) -> None:
    assert gpu.idle_pct == pytest.approx(hta["idlePct"], abs=0.1)
    assert gpu.compute_pct == pytest.approx(hta["computePct"], abs=0.1)
    assert gpu.non_compute_pct == pytest.approx(hta["nonComputePct"], abs=0.1)
    if math.isnan(hta["overlapPct"]):
        assert gpu.overlap_pct is None
    else:
        assert gpu.overlap_pct == pytest.approx(hta["overlapPct"], abs=0.5)


@pytest.mark.parametrize(
    "names",
    [
        ("sampled_rank-0.json.gz", "sampled_rank-1.json.gz"),
        ("nccl_data.json.gz",),
        ("mi250_minitoy_train_ROCm6_2_kineto.json.gz",),
        ("mtia_inference_rank_0.json.gz",),
        ("mtia_rank_0.json.gz",),
    ],
    ids=["sampled-ranks", "nccl-data", "rocm-mi250", "mtia-inference", "mtia-training"],
)
def test_real_traces_agree_with_hta(tmp_path: Path, names: tuple[str, ...]) -> None:
    for name in names:
        shutil.copy(TRACES / name, tmp_path / name)
    reference = hta_figures(tmp_path)
    assert len(reference) == len(names)
    for name, (rank, figures) in zip(names, sorted(reference.items()), strict=True):
        gpu = ours(tmp_path / name)
        assert_agrees(gpu, figures)
        assert gpu.kernel_us == pytest.approx(figures["kernelUs"], abs=1), rank


def test_a_trace_without_gpu_events_where_hta_crashes(tmp_path: Path) -> None:
    shutil.copy(TRACES / "rank_not_found.json.gz", tmp_path / "rank-0.json.gz")
    with pytest.raises(IndexError):  # HTA's breakdown takes the first of no kernels
        hta_figures(tmp_path)
    (trace,) = analyze_file("t.json.gz", FileSource(tmp_path / "rank-0.json.gz"))
    assert trace.analysis.problem is None
    assert trace.analysis.gpu is None
    assert trace.analysis.steps.count == 1
    assert sum(op.count for g in trace.analysis.collectives for op in g.ops.values()) == 12


@pytest.mark.parametrize(
    "run",
    [
        Run(tp=2, dp=2, steps=5, seed=1),
        Run(tp=4, dp=2, steps=3, fractional=True, seed=2),
        Run(tp=2, dp=3, steps=4, slow={4: 1.8}, seed=3),
    ],
    ids=["4-ranks", "8-ranks-ns-timestamps", "6-ranks-straggler"],
)
def test_generated_runs_agree_with_hta(tmp_path: Path, run: Run) -> None:
    paths = write_run(tmp_path, run)
    reference = hta_figures(tmp_path)
    assert sorted(reference) == list(range(run.world))
    for rank, path in enumerate(paths):
        assert_agrees(ours(path), reference[rank])


def test_an_accelerator_trace_with_transfers_beside_jobs_agrees_with_hta(tmp_path: Path) -> None:
    """An MTIA-shaped trace (``accelerator_writer``): its ``pe_exe``/``job_exe`` jobs are
    computation to HTA's breakdown, its ``dma_request`` transfers memory."""
    path = write_accelerator_trace(tmp_path, steps=4, jobs_per_step=60, seed=5)
    reference = hta_figures(tmp_path)
    assert_agrees(ours(path), reference[0])
