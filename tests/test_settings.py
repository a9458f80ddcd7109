"""Settings read from the environment: what each accepts, and how a bad value is named."""

from __future__ import annotations

from pathlib import Path

import pytest

from tracesets.settings import Settings, SettingsError


def test_a_rate_limit_may_be_a_fraction_of_a_request_a_second(tmp_path: Path) -> None:
    settings = Settings.from_env({"TRACESETS_RATE_LIMIT": "0.5"}, data_dir=tmp_path)
    assert settings.rate_limit == 0.5
    assert Settings.from_env({}, data_dir=tmp_path).rate_limit == 100


@pytest.mark.parametrize("raw", ["0", "-1", "nan", "inf", "fast", "1/2"])
def test_a_rate_limit_must_be_a_number_above_zero(tmp_path: Path, raw: str) -> None:
    with pytest.raises(SettingsError) as refused:
        Settings.from_env({"TRACESETS_RATE_LIMIT": raw}, data_dir=tmp_path)
    assert str(refused.value) == f"TRACESETS_RATE_LIMIT must be a number above 0; got {raw!r}"
