"""The rank-count rules of workload metadata, exactly as the source document states them.

Pure: parsed JSON in, every problem or the derived rank count out. The server, the
client and the command line all call ``check_upload_metadata``, so a rule lives once.

What the rules read: ``shape.rankCount`` and ``parallelism.dp/tp/sp/ep/pp``, nothing
else. JSON null is absent at every level. ``shape.rank_count`` is not a declaration.
Other members are stored as given and not looked at here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import MAX_EMAX, MAX_PREC, Decimal, localcontext
from typing import Final

from tracesets import jsontext
from tracesets.jsontext import JsonNumber, JsonValue
from tracesets.problems import Problem

MAX_RANK_COUNT: Final = 2_147_483_647
MAX_SERIALIZED_BYTES: Final = 65_536
DEGREES: Final = ("dp", "tp", "sp", "ep", "pp")
ROOT: Final = "workloadMetadata"

_BEYOND_64_BITS: Final = 2**64

MISSING_RANK_COUNT: Final = (
    "Uploads with primary trace files must declare a rank count: set "
    "workloadMetadata.shape.rankCount, or workloadMetadata.parallelism degrees "
    "(dp, tp, sp, ep, pp)"
)


@dataclass(frozen=True, slots=True)
class RankCountCheck:
    """What the rules found: the derived rank count (None when nothing is declared)."""

    rank_count: int | None
    problems: list[Problem] = field(default_factory=list)
    serialized: bytes | None = None

    @property
    def ok(self) -> bool:
        return not self.problems


#: Past this many characters a value is shortened in messages (a 5,000-digit number
#: would otherwise fill the message): its start, its end, and how long it is.
SHOWN_CHARS: Final = 80


def show(value: JsonValue) -> str:
    """A value as the user wrote it, for messages: ``2.0``, ``"4"``, ``true``."""
    try:
        text = jsontext.dumps(value).decode()
    except jsontext.JsonError:
        try:
            text = repr(value)  # a lone surrogate, or nesting deeper than orjson writes
        except RecursionError:
            return "a value nested too deeply to show"
    if len(text) <= SHOWN_CHARS:
        return text
    return f"{text[:48]}…{text[-16:]} ({len(text):,} characters)"


def whole_number_problem(member: str, value: JsonValue) -> Problem:
    return Problem(
        member, value, f"{member} must be a whole number of at least 1; got {show(value)}"
    )


def is_whole_number_at_least_1(value: JsonValue) -> bool:
    """An integer literal of at least 1: ``2``, not ``0``, ``-1``, ``2.0``, ``"4"`` or ``true``."""
    if type(value) is int:
        return value >= 1
    return isinstance(value, JsonNumber) and value.is_integer and not value.is_negative


def _exceeds_limit(value: int | JsonNumber) -> bool:
    # A JsonNumber integer has more than 64 bits, so a positive one is always too large.
    return isinstance(value, JsonNumber) or value > MAX_RANK_COUNT


def _object_or_absent(
    member: str, value: JsonValue, problems: list[Problem]
) -> dict[str, JsonValue]:
    if value is None:
        return {}
    if isinstance(value, dict):
        return value
    problems.append(
        Problem(member, value, f"{member} must be an object or null; got {show(value)}")
    )
    return {}


def declared_degrees(parallelism: dict[str, JsonValue]) -> dict[str, JsonValue]:
    """The factors of the rank count that are given (null is absent)."""
    return {name: parallelism[name] for name in DEGREES if parallelism.get(name) is not None}


def read_declaration(
    metadata: JsonValue, problems: list[Problem]
) -> tuple[JsonValue, dict[str, JsonValue], int | None]:
    """Check the rank-count members; return (rankCount, valid degrees, their product).

    Appends a problem for each member that is not a whole number of at least 1, and for
    containers that are neither objects nor null. The product is None when no degree
    is declared or any declared degree is invalid.
    """
    root = _object_or_absent(ROOT, metadata, problems)
    shape = _object_or_absent(f"{ROOT}.shape", root.get("shape"), problems)
    parallelism = _object_or_absent(f"{ROOT}.parallelism", root.get("parallelism"), problems)

    rank_count = shape.get("rankCount")
    if rank_count is not None and not is_whole_number_at_least_1(rank_count):
        problems.append(whole_number_problem(f"{ROOT}.shape.rankCount", rank_count))
        rank_count = None

    degrees = declared_degrees(parallelism)
    valid = True
    for name, degree in degrees.items():
        if not is_whole_number_at_least_1(degree):
            problems.append(whole_number_problem(f"{ROOT}.parallelism.{name}", degree))
            valid = False
    product: int | None = None
    if degrees and valid:
        product = 1
        for degree in degrees.values():
            # A JsonNumber integer has more than 64 bits: the product is over the limit
            # whatever it is, and the limit is all that the rules compare it with.
            product *= degree if isinstance(degree, int) else _BEYOND_64_BITS
    return rank_count, degrees, product


def check_rank_count(metadata: JsonValue, *, has_primary_files: bool) -> RankCountCheck:
    """Apply every rank-count rule of the source document; collect all problems."""
    problems: list[Problem] = []
    rank_count, degrees, product = read_declaration(metadata, problems)

    if rank_count is not None and _exceeds_limit(rank_count):
        problems.append(
            Problem(
                f"{ROOT}.shape.rankCount",
                rank_count,
                f"The rank count must not exceed 2,147,483,647; got {show(rank_count)}",
            )
        )
    if product is not None and product > MAX_RANK_COUNT:
        problems.append(
            Problem(
                f"{ROOT}.parallelism",
                metadata["parallelism"],
                "The rank count must not exceed 2,147,483,647; the product of the parallelism "
                f"degrees {_product_text(degrees)} exceeds it",
            )
        )
    if rank_count is not None and product is not None and not _equals_product(rank_count, degrees):
        problems.append(
            Problem(
                f"{ROOT}.shape.rankCount",
                rank_count,
                "When both forms are given, shape.rankCount must equal the product: "
                f"shape.rankCount is {show(rank_count)}, the product "
                f"{_product_text(degrees)} is {_shown_product(product)}",
            )
        )

    declared = any(
        value is not None for value in (_rank_count_member(metadata), *_degree_members(metadata))
    )
    if has_primary_files and not declared and not problems:
        problems.append(Problem(ROOT, metadata, MISSING_RANK_COUNT))

    derived: int | None = None
    if not problems:
        derived = rank_count if isinstance(rank_count, int) else product
    return RankCountCheck(derived, problems)


def _equals_product(rank_count: int | JsonNumber, degrees: dict[str, JsonValue]) -> bool:
    """Whether rankCount is exactly the product, however many digits either has."""
    values = [rank_count, *degrees.values()]
    if all(type(value) is int for value in values):
        product = 1
        for degree in degrees.values():
            product *= degree
        return bool(rank_count == product)
    # Integers beyond 64 bits stay text (int() refuses over 4,300 digits); decimal
    # arithmetic with unbounded precision multiplies them exactly, and fast.
    with localcontext() as context:
        context.prec = MAX_PREC
        context.Emax = MAX_EMAX
        exact = Decimal(1)
        for degree in degrees.values():
            exact *= _decimal(degree)
        return exact == _decimal(rank_count)


def _decimal(value: int | JsonNumber) -> Decimal:
    return Decimal(value.text if isinstance(value, JsonNumber) else value)


def _shown_product(product: int) -> str:
    return f"{product:,}" if product <= MAX_RANK_COUNT else "larger than 2,147,483,647"


def _product_text(degrees: dict[str, JsonValue]) -> str:
    return " × ".join(f"{name}={show(value)}" for name, value in degrees.items())


def _rank_count_member(metadata: JsonValue) -> JsonValue:
    shape = metadata.get("shape") if isinstance(metadata, dict) else None
    return shape.get("rankCount") if isinstance(shape, dict) else None


def _degree_members(metadata: JsonValue) -> list[JsonValue]:
    parallelism = metadata.get("parallelism") if isinstance(metadata, dict) else None
    if not isinstance(parallelism, dict):
        return []
    return [parallelism.get(name) for name in DEGREES]


def check_upload_metadata(
    metadata: JsonValue, *, has_primary_files: bool, max_bytes: int = MAX_SERIALIZED_BYTES
) -> RankCountCheck:
    """Every rule the source document applies to ``workloadMetadata`` on upload.

    Returns the derived rank count and the compact serialized text to store, or every
    problem found (rank-count rules and the 65,536-byte limit together). A service may
    set a lower size limit (``max_bytes``), never a higher one.
    """
    max_bytes = min(max_bytes, MAX_SERIALIZED_BYTES)
    check = check_rank_count(metadata, has_primary_files=has_primary_files)
    problems = list(check.problems)
    serialized: bytes | None = None
    if metadata is not None:
        try:
            serialized = jsontext.dumps(metadata)
        except jsontext.JsonError as exc:
            problems.append(Problem(ROOT, None, str(exc)))
        else:
            if len(serialized) > max_bytes:
                problems.append(
                    Problem(
                        ROOT,
                        len(serialized),
                        f"workloadMetadata must be at most {max_bytes:,} bytes when serialized; "
                        f"it is {len(serialized):,} bytes",
                    )
                )
    if problems:
        return RankCountCheck(None, problems)
    return RankCountCheck(check.rank_count, [], serialized)
