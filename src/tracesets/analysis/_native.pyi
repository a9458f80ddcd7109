# A rank's pass in C (native/); tracesets.analysis.compiled uses it, rank.py its event loop.
from array import array
from collections.abc import Callable

Moments = tuple[int, float, float, float, float, float, float]
Steps = tuple[
    array[float] | bytes, array[float] | bytes, array[int] | bytes, int | None, float, float, bool
]
Cell = tuple[float, float, float, float]
#: count, the values while exact (bytes of doubles), else None; the bins (index, count)
Values = tuple[int, bytes | None, list[tuple[int, int]]]
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
    Values,  # the launch calls' durations
    Values,  # their GPU events'
    Values,  # the launch delays
]

class Core:
    def __init__(
        self,
        window: int,
        buffer: int,
        fan_in: int,
        resolve: Callable[[str], int],
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
        self, last_step: float | None, steps: Steps | None, tracked_streams: int, exact: int, /
    ) -> Finished: ...
    def close(self) -> None: ...

class Operators:
    def __init__(
        self,
        shown: Callable[[str], str],
        other: str,
        steps: str,
        max_names: int,
        max_pending: int,
        rescan_left: int,
    ) -> None: ...
    @property
    def names(self) -> list[str]: ...
    @property
    def by_name(self) -> dict[str, int]: ...
    def step(self, number: int, name: str, start: float, end: float, /) -> None: ...
    def cpu(self, name: str, ts: float, dur: float, /) -> None: ...
    def settle(self) -> None: ...
    def cells(self) -> list[tuple[int, float, int, float]]: ...
    def add_cell(
        self, name: str, count: float, total: float, first_count: float, first_total: float, /
    ) -> None: ...
    def steps(self) -> tuple[bytes, bytes, bytes, int | None, float, float, bool]: ...

def configure(
    event: type,
    args: type,
    no_args: object,
    step_match: Callable[[str], object],
    stream_of: Callable[[object], int],
    kernel_categories: frozenset[str],
    launches: frozenset[str],
    device_syncs: frozenset[str],
    named: frozenset[str],
    collective: str,
    /,
) -> None: ...
def fold_events(
    events: list[object],
    core: Core,
    operators: Operators,
    on_step: Callable[..., None],
    on_collective: Callable[..., None],
    /,
) -> None: ...
