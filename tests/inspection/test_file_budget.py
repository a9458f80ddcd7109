"""Reading one file stops once it has used its CPU budget: a finding for that file, the
other files read as ever, the inspection done."""

from __future__ import annotations

import gzip
from collections.abc import Iterator

import httpx
import pytest

from tests.flows import inspected, upload
from tests.inspection.kineto_writer import kineto_trace
from tests.server import ServerProcess
from tracesets.analysis import stored
from tracesets.inspection import BytesSource
from tracesets.inspection import budget as budget_module
from tracesets.inspection.budget import SETTING, budget_seconds
from tracesets.service.reading import read_stored
from tracesets.settings import Settings, SettingsError


class Ticks:
    """A CPU clock that advances one second each time it is read: work counted in checks."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


@pytest.fixture
def ticking(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(budget_module, "clock", Ticks())
    monkeypatch.setenv(SETTING, "40")
    yield


def test_a_file_past_its_budget_is_a_finding_and_the_next_file_is_read(ticking: None) -> None:
    small = gzip.compress(kineto_trace(0, 2), mtime=0)
    large = gzip.compress(kineto_trace(1, 2, size=16 * 1024 * 1024, layout="tail"), mtime=0)
    for name, data in (("rank-1.json.gz", large), ("rank-0.json.gz", small)):
        findings, traces = stored.loads(read_stored(name, BytesSource(data)))
        (finding,), (trace,) = findings, traces
        if name == "rank-1.json.gz":
            assert finding.problem is not None and SETTING in finding.problem, finding
            assert "40 s of CPU" in finding.problem and not finding.readable
            assert trace.analysis.problem is not None and SETTING in trace.analysis.problem
        else:
            assert (finding.rank, finding.problem, finding.readable) == (0, None, True)
            assert trace.analysis.problem is None and trace.analysis.events == 201


def test_the_setting_is_read_as_whole_seconds_and_refused_at_start_otherwise() -> None:
    assert budget_seconds({}) == 300
    assert budget_seconds({SETTING: "45"}) == 45
    assert budget_seconds({SETTING: "0"}) == 0
    assert Settings.from_env({SETTING: "45"}).inspect_file_cpu_seconds == 45
    for wrong in ("-1", "x", "2.5", "86401"):
        with pytest.raises(SettingsError, match=SETTING):
            Settings.from_env({SETTING: wrong})
        assert budget_seconds({SETTING: wrong}) == 300  # a reader the service did not start


def test_the_service_records_each_file_over_budget_and_finishes(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    server = ServerProcess(tmp_path_factory.mktemp("budget"), extra_env={SETTING: "0"})
    server.start()
    try:
        with httpx.Client(
            base_url=server.url, headers={"Authorization": f"Bearer {server.token}"}, timeout=60
        ) as api:
            # large enough to be read in steps (a small one is inflated whole, at once)
            files = {
                f"rank-{r}.json.gz": gzip.compress(
                    kineto_trace(r, 2, size=8 * 1024 * 1024, layout="tail"), mtime=0
                )
                for r in (0, 1)
            }
            traceset = upload(api, files, {"shape": {"rankCount": 2}})
            inspection = inspected(api, traceset["id"])["inspection"]
    finally:
        server.stop()
    assert inspection["status"] == "done", inspection
    assert sorted(inspection["unreadable"]) == sorted(files)
    for finding in inspection["files"]:
        assert SETTING in finding["problem"], finding
    assert inspection["perRank"] == []  # figures go with a rank, and these gave none
