"""What a traceset's traces say about the run: per-rank figures, checked across ranks.

Pure, like ``tracesets.inspection``: bytes come in through a ``ByteSource``, figures
come out. Each trace is read through once, its events parsed a block at a time
(``events``), and folded into running figures (``rank``); GPU events are paired with
their launches in a window and sorted in runs spilled to a temporary file (``kernels``,
``spill``), then swept once (``gpu``). Memory does not grow with the trace.

    analyses = analyze_file("rank-3.json.gz", FileSource("rank-3.json.gz"))
    analyses[0].analysis.gpu.compute_pct  # 71.52
"""

from tracesets.analysis.files import TraceAnalysis, analyze_file, analyze_stream
from tracesets.analysis.gpu import GpuTime
from tracesets.analysis.rank import GroupCollectives, OpCount, RankAnalysis, Steps

__all__ = [
    "GpuTime",
    "GroupCollectives",
    "OpCount",
    "RankAnalysis",
    "Steps",
    "TraceAnalysis",
    "analyze_file",
    "analyze_stream",
]
