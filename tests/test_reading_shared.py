"""A file's findings read from the bytes its figures inflated, and a few small files to a
pool task: the same answers as one file at a time, each file's failure its own."""

from __future__ import annotations

import gzip
from concurrent.futures import CancelledError, Future
from pathlib import Path

import pytest

from tracesets.analysis import analyze_file
from tracesets.inspection import inspect_file
from tracesets.inspection.source import BytesSource, inflate_small, inflated_already
from tracesets.service.reading import PoolFile, _answer_each, read_in_pool, read_stored

TRACES = Path(__file__).parent / "data" / "traces"
NAMES = ["sampled_rank-0.json.gz", "sampled_rank-1.json.gz", "rank_not_found.json.gz"]


@pytest.mark.parametrize("name", NAMES)
def test_the_findings_of_inflated_bytes_are_those_read_step_by_step(name: str) -> None:
    data = (TRACES / name).read_bytes()
    stepwise = inspect_file(name, BytesSource(data))
    source = BytesSource(data)
    assert inflated_already(source) is None  # nothing kept before the figures ran
    analyze_file(name, source)
    assert inflated_already(source) == gzip.decompress(data)
    assert inflate_small(source) is inflated_already(source)  # inflated once
    assert inspect_file(name, source) == stepwise


def test_a_broken_gzip_is_kept_as_nothing_and_read_step_by_step() -> None:
    data = (TRACES / NAMES[0]).read_bytes()[:-100]
    source = BytesSource(data)
    analyze_file("cut.json.gz", source)
    assert inflated_already(source) is None
    assert inspect_file("cut.json.gz", source) == inspect_file("cut.json.gz", BytesSource(data))


def test_a_pool_task_answers_each_file_as_read_alone() -> None:
    datas = {name: (TRACES / name).read_bytes() for name in NAMES}
    answers = read_in_pool([(name, data) for name, data in datas.items()], None)
    assert answers == [read_stored(name, BytesSource(data)) for name, data in datas.items()]


def test_a_local_file_sent_by_its_path_reads_as_its_bytes_and_a_missing_one_fails_alone(
    tmp_path: Path,
) -> None:
    data = (TRACES / NAMES[0]).read_bytes()
    files: list[PoolFile] = [
        ("a", str(TRACES / NAMES[0])),
        ("gone", str(tmp_path / "gone.json.gz")),
        ("c", data),
    ]
    answers = read_in_pool(files, None)
    assert answers[0] == read_stored("a", BytesSource(data))
    assert answers[2] == read_stored("c", BytesSource(data))
    assert isinstance(answers[1], FileNotFoundError)


def test_a_file_that_fails_in_a_pool_task_fails_alone() -> None:
    def before(name: str) -> None:
        if name == "b":
            raise RuntimeError("the store went away")

    data = (TRACES / NAMES[0]).read_bytes()
    answers = read_in_pool([("a", data), ("b", data), ("c", data)], before)
    assert isinstance(answers[1], RuntimeError)
    assert answers[0] == read_stored("a", BytesSource(data))
    assert answers[2] == read_stored("c", BytesSource(data))


def _fanned(task: Future[list[str | Exception]]) -> list[Future[str]]:
    answers: list[Future[str]] = [Future(), Future()]
    task.add_done_callback(lambda done: _answer_each(answers, done))
    return answers


def test_each_file_of_a_task_gets_its_own_answer() -> None:
    task: Future[list[str | Exception]] = Future()
    answers = _fanned(task)
    failure = RuntimeError("unreadable store")
    task.set_result(["text", failure])
    assert answers[0].result() == "text"
    assert answers[1].exception() is failure


def test_a_task_that_failed_or_was_cancelled_fails_every_file() -> None:
    died: Future[list[str | Exception]] = Future()
    answers = _fanned(died)
    failure = RuntimeError("a pool process died")
    died.set_exception(failure)
    assert [answer.exception() for answer in answers] == [failure, failure]
    cancelled: Future[list[str | Exception]] = Future()
    answers = _fanned(cancelled)
    assert cancelled.cancel()
    for answer in answers:
        with pytest.raises(CancelledError):
            answer.result()
