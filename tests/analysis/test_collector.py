"""The collector is changed while traces are read, and restored once no one reads."""

from __future__ import annotations

import gc
import threading

from tracesets.analysis.collector import YOUNG, fewer_collections


def test_overlapping_readers_restore_the_collector_when_the_last_leaves() -> None:
    before = gc.get_threshold()
    first_in, second_in, first_out = threading.Event(), threading.Event(), threading.Event()
    seen: list[tuple[int, ...]] = []

    def first() -> None:
        with fewer_collections():
            first_in.set()
            second_in.wait()
        first_out.set()

    thread = threading.Thread(target=first)
    thread.start()
    first_in.wait()
    with fewer_collections():
        second_in.set()
        first_out.wait()  # the first reader has left: this one still reads
        seen.append(gc.get_threshold())
        assert gc.get_freeze_count() > 0
    thread.join()
    assert seen == [(YOUNG, *before[1:])]
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0


def test_garbage_cycles_are_still_collected_within_a_bound() -> None:
    class Node:
        def __init__(self) -> None:
            self.me = self

    with fewer_collections():
        alive = [object() for _ in range(10)]
        for _ in range(3 * YOUNG):
            Node()
        assert gc.get_count()[0] < YOUNG + 10
    assert alive
