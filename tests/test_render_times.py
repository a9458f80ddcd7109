"""Times go out in UTC, to the millisecond, whatever zone the database handed them in."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from hypothesis import given
from hypothesis import strategies as st

from tracesets.api.render import timestamp


def test_a_time_in_another_zone_goes_out_as_the_same_instant_in_utc() -> None:
    paris_winter = timezone(timedelta(hours=1))
    value = datetime(2026, 12, 1, 18, 30, 5, 123999, tzinfo=paris_winter)
    assert timestamp(value) == "2026-12-01T17:30:05.123Z"


def test_early_years_keep_four_digits() -> None:
    assert timestamp(datetime(999, 1, 2, 3, 4, 5, tzinfo=UTC)) == "0999-01-02T03:04:05.000Z"


@given(
    st.datetimes(min_value=datetime(1000, 1, 1), max_value=datetime(9998, 12, 31)),
    st.integers(min_value=-14 * 60, max_value=14 * 60),
)
def test_every_time_reads_back_as_the_same_instant_to_the_millisecond(
    naive: datetime, offset_minutes: int
) -> None:
    value = naive.replace(tzinfo=timezone(timedelta(minutes=offset_minutes)))
    said = timestamp(value)
    assert said is not None and said.endswith("Z") and len(said) == 24
    back = datetime.fromisoformat(said[:-1] + "+00:00")
    exact = value.astimezone(UTC)
    assert back == exact.replace(microsecond=exact.microsecond // 1000 * 1000)


def test_none_stays_none() -> None:
    assert timestamp(None) is None
