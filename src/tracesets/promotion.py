"""Promotion's checks of workload metadata: the upload rules again, and then its own.

Pure: parsed JSON in, every problem and warning out. Promotion is the moment metadata
becomes trustworthy, so it checks more than upload did: the rank count must be the one
the traceset holds (a rank count cannot be changed after upload), ``cp`` and ``fsdp``
must make sense, and the descriptive members, read in snake_case only, go through a
strict typed model. Upload stored those members without looking, so a traceset that
uploaded fine can still fail here, and the problems say which member and why.

Nothing is rewritten: what is stored is the object as given, members the model does not
read included. Descriptive members spelled otherwise (``workloadFamily``) are not read
at all, which a user would not notice without the warnings.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from decimal import MAX_EMAX, MAX_PREC, Decimal, localcontext
from typing import Annotated, Any, Final

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from tracesets import workload
from tracesets.jsontext import JsonNumber, JsonValue
from tracesets.problems import Problem
from tracesets.workload import ROOT, is_whole_number_at_least_1, show, whole_number_problem

_NO_DEGREES: Final = (
    "A parallelism object that holds none of dp, tp, sp, ep and pp declares nothing, and "
    "promotion refuses such a parallelism"
)
_CHANGED: Final = "A rank count cannot be changed after upload"
_INT_STR_DIGITS: Final = 4_300  # Python's default limit for int() of a string

Count = Annotated[int, Field(ge=1)]


class DescriptiveShape(BaseModel):
    """The members of ``shape`` promotion reads besides the rank count."""

    model_config = ConfigDict(strict=True, extra="ignore", frozen=True)

    global_batch_size: Count | None = None
    micro_batch_size: Count | None = None
    sequence_length: Count | None = None


class DescriptiveMembers(BaseModel):
    """The descriptive members of ``workloadMetadata``, in the spelling promotion reads."""

    model_config = ConfigDict(strict=True, extra="ignore", frozen=True)

    workload_family: str | None = None
    workload_name: str | None = None
    precision: str | None = None
    accelerator: str | None = None
    shape: DescriptiveShape | None = None


#: The members read at the top level; ``shape`` is read member by member.
_TOP_LEVEL: Final = tuple(name for name in DescriptiveMembers.model_fields if name != "shape")


@dataclass(frozen=True, slots=True)
class PromotionCheck:
    """Every problem found; warnings; the compact JSON to store when there is no problem."""

    problems: list[Problem]
    warnings: list[str]
    serialized: bytes | None

    @property
    def ok(self) -> bool:
        return not self.problems


def check_promotion(
    metadata: JsonValue,
    *,
    stored_rank_count: int | None,
    has_primary_files: bool,
    max_metadata_bytes: int = workload.MAX_SERIALIZED_BYTES,
) -> PromotionCheck:
    """Apply every promotion rule of the contract to ``metadata``; collect all problems."""
    # When the traceset holds a rank count, the guard already demands a declaration and
    # says more than "must declare a rank count" would: report that fault once.
    upload = workload.check_upload_metadata(
        metadata,
        has_primary_files=has_primary_files and stored_rank_count is None,
        max_bytes=max_metadata_bytes,
    )
    problems = list(upload.problems)
    declared = workload.check_rank_count(metadata, has_primary_files=False)
    if declared.ok:  # otherwise the upload rules name the faulty members already
        problems += _guard(metadata, declared.rank_count, stored_rank_count)
    warnings: list[str] = []
    if isinstance(metadata, dict):
        shape = metadata.get("shape")
        parallelism = metadata.get("parallelism")
        if isinstance(parallelism, dict):
            problems += _parallelism_problems(parallelism)
        if isinstance(shape, dict):
            derived = declared.rank_count if declared.ok else None
            problems += _snake_rank_count_problems(shape, parallelism, derived)
        problems += _descriptive_problems(metadata)
        warnings = _spelling_warnings(metadata)
    return PromotionCheck(problems, warnings, None if problems else upload.serialized)


def _guard(metadata: JsonValue, declared: int | None, stored: int | None) -> list[Problem]:
    if declared == stored:
        return []
    shape = metadata.get("shape") if isinstance(metadata, dict) else None
    if declared is None:
        return [
            Problem(
                ROOT,
                metadata,
                f"{_CHANGED}: workloadMetadata declares no rank count, and the traceset holds "
                f"{stored}; declare it through shape.rankCount or the parallelism degrees",
            )
        ]
    if isinstance(shape, dict) and shape.get("rankCount") is not None:
        member, value = f"{ROOT}.shape.rankCount", shape["rankCount"]
    else:
        member, value = f"{ROOT}.parallelism", metadata["parallelism"]
    held = "none; remove shape.rankCount and the parallelism degrees" if stored is None else stored
    return [
        Problem(
            member,
            value,
            f"{_CHANGED}: workloadMetadata declares a rank count of {declared}, and the "
            f"traceset holds {held}",
        )
    ]


def _parallelism_problems(parallelism: dict[str, JsonValue]) -> list[Problem]:
    problems: list[Problem] = []
    if not workload.declared_degrees(parallelism):
        problems.append(Problem(f"{ROOT}.parallelism", parallelism, _NO_DEGREES))
    valid: dict[str, JsonValue] = {}
    for name in ("cp", "fsdp"):
        value = parallelism.get(name)
        if value is None:
            continue
        if is_whole_number_at_least_1(value):
            valid[name] = value
        else:
            problems.append(whole_number_problem(f"{ROOT}.parallelism.{name}", value))
    fsdp = valid.get("fsdp")
    dp = parallelism.get("dp")
    if fsdp is not None and (dp is None or is_whole_number_at_least_1(dp)):
        dp_text = "absent and counts as 1" if dp is None else show(dp)
        if not _divides(fsdp, 1 if dp is None else dp):
            problems.append(
                Problem(
                    f"{ROOT}.parallelism.fsdp",
                    fsdp,
                    f"parallelism.fsdp must divide parallelism.dp: fsdp is {show(fsdp)}, "
                    f"dp is {dp_text}",
                )
            )
    return problems


def _snake_rank_count_problems(
    shape: dict[str, JsonValue], parallelism: JsonValue, derived: int | None
) -> list[Problem]:
    """``shape.rank_count`` is no declaration, but when given it must agree with one."""
    value = shape.get("rank_count")
    member = f"{ROOT}.shape.rank_count"
    if value is None:
        return []
    if not is_whole_number_at_least_1(value):
        return [whole_number_problem(member, value)]
    if derived is None or _decimal(value) == derived:
        return []
    degrees = workload.declared_degrees(parallelism) if isinstance(parallelism, dict) else {}
    if degrees:
        factors = " × ".join(f"{name}={show(degree)}" for name, degree in degrees.items())
        against = (
            f"the parallelism product: shape.rank_count is {show(value)}, the product {factors} is"
        )
    else:
        against = f"shape.rankCount: shape.rank_count is {show(value)}, shape.rankCount is"
    return [Problem(member, value, f"{member} must equal {against} {derived}")]


def _descriptive_problems(root: dict[str, JsonValue]) -> list[Problem]:
    # Only the members the model reads go in, so whatever else the object holds, however
    # deep, passes through untouched and unvisited.
    given = _read_members(root, _TOP_LEVEL)
    shape = root.get("shape")
    if isinstance(shape, dict):  # null is absent; anything else the upload rules refuse
        given["shape"] = _read_members(shape, DescriptiveShape.model_fields)
    try:
        DescriptiveMembers.model_validate(given)
    except ValidationError as exc:
        return [_problem_of(e["loc"], e["type"], e["msg"], root) for e in exc.errors()]
    return []


def _read_members(container: dict[str, JsonValue], names: Iterable[str]) -> dict[str, Any]:
    return {name: _for_model(container[name]) for name in names if name in container}


def _for_model(value: JsonValue) -> JsonValue:
    """A JSON number as pydantic can judge it: integer literals as int, others as float."""
    if not isinstance(value, JsonNumber):
        return value
    if not value.is_integer:
        return float(value.text)
    if len(value.text) <= _INT_STR_DIGITS:
        return int(value.text)
    # Too many digits for int(); beyond 64 bits, only the sign matters to ``ge=1``.
    return -1 if value.is_negative else 2**64


def _problem_of(
    loc: tuple[int | str, ...], kind: str, pydantic_message: str, root: dict[str, JsonValue]
) -> Problem:
    member = ".".join([ROOT, *map(str, loc)])
    value: JsonValue = root
    for key in loc:
        value = value[key]
    if kind == "string_type":
        return Problem(member, value, f"{member} must be a string or null; got {show(value)}")
    if kind in ("int_type", "greater_than_equal"):
        return whole_number_problem(member, value)
    return Problem(member, value, f"{member}: {pydantic_message}; got {show(value)}")


def _spelling_warnings(root: dict[str, JsonValue]) -> list[str]:
    warnings = _misspelled(ROOT, root, _TOP_LEVEL)
    shape = root.get("shape")
    if isinstance(shape, dict):
        warnings += _misspelled(f"{ROOT}.shape", shape, DescriptiveShape.model_fields)
    return warnings


def _misspelled(path: str, container: dict[str, JsonValue], read: Iterable[str]) -> list[str]:
    """Members spelled like a read member but not as one: workloadFamily, Precision, …"""
    by_letters = {_letters(name): name for name in read}
    warnings = []
    for key, value in container.items():
        meant = by_letters.get(_letters(key))
        if meant is not None and key != meant and value is not None:
            warnings.append(f"{path}.{key} is not read: promotion reads {meant}")
    return warnings


def _letters(name: str) -> str:
    return name.replace("_", "").replace("-", "").lower()


def _divides(divisor: int | JsonNumber, dividend: int | JsonNumber) -> bool:
    if type(divisor) is int and type(dividend) is int:
        return dividend % divisor == 0
    # Integers beyond 64 bits stay text; unbounded decimal arithmetic divides them exactly.
    with localcontext() as context:
        context.prec = MAX_PREC
        context.Emax = MAX_EMAX
        return _decimal(dividend) % _decimal(divisor) == 0


def _decimal(value: int | JsonNumber) -> Decimal:
    return Decimal(value.text if isinstance(value, JsonNumber) else value)
