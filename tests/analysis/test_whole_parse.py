"""A small gzip trace's events parsed in one piece give what block by block gives.

``analyze_file`` parses a trace inflated whole in one piece; the scanner otherwise cuts
it into blocks. With blocks of a few kilobytes (so that a real rank's trace is cut in
dozens of places), both must give the same figures for a good trace, and for a broken
one the same partial figures and the same problem: such a trace is read again block by
block.
"""

from __future__ import annotations

import gzip
import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from tracesets.analysis import events as events_module
from tracesets.analysis.events import Decoding, Outside
from tracesets.analysis.files import WHOLE_PARSE_LIMIT, analyze_file, analyze_stream
from tracesets.analysis.rank import RankAnalysis
from tracesets.inspection.decompress import Readable
from tracesets.inspection.source import BytesSource

TRACES = Path(__file__).resolve().parents[1] / "data" / "traces"
SMALL_BLOCK = 4096


def real_trace() -> bytes:
    """A rank's trace of about 350 KB: a real one's header and every fifth of its events,
    as a job's rank files are in ``bench/inspect_job.py``."""
    trace = orjson.loads(gzip.decompress((TRACES / "sampled_rank-0.json.gz").read_bytes()))
    trace["traceEvents"] = trace["traceEvents"][::5]
    return orjson.dumps(trace)


def whole(trace: bytes) -> RankAnalysis:
    (found,) = analyze_file("rank-0.json.gz", BytesSource(gzip.compress(trace)))
    return found.analysis


def blockwise(trace: bytes) -> RankAnalysis:
    return analyze_stream(io.BytesIO(trace))


def broken(trace: bytes) -> dict[str, bytes]:
    """The trace cut short, and with bad JSON two thirds of the way into its events."""
    at = trace.index(b'"ph"', 2 * len(trace) // 3)
    return {
        "cut short": trace[: len(trace) // 2],
        "bad JSON": trace[:at] + b"nope" + trace[at:],
    }


@pytest.fixture
def small_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(events_module, "BLOCK", SMALL_BLOCK)


@pytest.mark.usefixtures("small_blocks")
def test_a_good_trace_gives_the_same_figures_in_one_piece_as_in_blocks() -> None:
    trace = real_trace()
    assert SMALL_BLOCK * 20 < len(trace) <= WHOLE_PARSE_LIMIT
    found = whole(trace)
    assert found.problem is None and found.events > 900 and found.gpu is not None
    assert found == blockwise(trace)


@pytest.mark.usefixtures("small_blocks")
@pytest.mark.parametrize("how", ["cut short", "bad JSON"])
def test_a_broken_trace_keeps_the_partial_figures_of_its_blocks(how: str) -> None:
    trace = broken(real_trace())[how]
    found = whole(trace)
    assert found.problem is not None
    assert found == blockwise(trace)
    if how == "bad JSON":  # parsed in one piece only, the events before it would be lost
        one_piece = analyze_stream(io.BytesIO(trace), block=len(trace) + 1)
        assert one_piece.events < found.events


@pytest.mark.usefixtures("small_blocks")
def test_a_trace_past_the_limit_is_read_in_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    blocks: list[int | None] = []
    scan = events_module.scan_events

    def counting(
        stream: Readable,
        on_batch: Callable[[list[Any]], None],
        decoding: Decoding,
        block: int | None = None,
    ) -> Outside:
        blocks.append(block)
        return scan(stream, on_batch, decoding, block)

    monkeypatch.setattr("tracesets.analysis.files.scan_events", counting)
    trace = real_trace()
    whole(trace)
    monkeypatch.setattr("tracesets.analysis.files.WHOLE_PARSE_LIMIT", len(trace) - 1)
    whole(trace)
    assert blocks == [len(trace) + 1, None]  # None: BLOCK at a time
