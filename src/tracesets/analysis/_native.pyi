# The compiled GPU half of the pass (native/module.c); tracesets.analysis.compiled uses it.
from array import array
from collections.abc import Callable

Moments = tuple[int, float, float, float, float, float, float]
Steps = tuple[array[float], array[float], array[int], int | None, float, float, bool]
Cell = tuple[float, float, float, float]
Finished = tuple[
    int,  # GPU events counted
    list[float],  # time by set of kinds
    float,  # the first start
    float,  # the last end
    float,  # busy time
    list[Moments],  # by kernel number
    Moments,  # kernels past the names kept
    list[tuple[int, float, float, float]],  # by stream: host, kernel and other waits
    int,  # short kernels
    int,  # long delays
    int,  # long runtimes
    list[Cell],  # operator counts by kernel number
    Cell,  # and past the names kept
]

class Core:
    def __init__(
        self,
        window: int,
        buffer: int,
        fan_in: int,
        resolve: Callable[[str], int],
        flush: Callable[[bytes, bytes, bytes], None],
        directory: str,
    ) -> None: ...
    def add_gpu(
        self,
        name: str,
        start: float,
        end: float,
        correlation: int,
        stream: int = 0,
        kernel_category: bool = True,
        /,
    ) -> None: ...
    def add_launch(self, start: float, correlation: int, call: float = ..., /) -> None: ...
    def finish(
        self, last_step: float | None, steps: Steps | None, tracked_streams: int, /
    ) -> Finished: ...
    def close(self) -> None: ...
