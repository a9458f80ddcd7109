"""Settings read from the environment: what each accepts, and how a bad value is named."""

from __future__ import annotations

from pathlib import Path

import pytest

from tracesets.api.serving import uvicorn_options
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


def test_service_processes_inspect_unless_told_not_to(tmp_path: Path) -> None:
    assert Settings.from_env({}, data_dir=tmp_path).inspect_in_service is True
    for raw, expected in (("0", False), ("false", False), ("1", True), ("yes", True)):
        env = {"TRACESETS_INSPECT_IN_SERVICE": raw}
        assert Settings.from_env(env, data_dir=tmp_path).inspect_in_service is expected
    with pytest.raises(SettingsError) as refused:
        Settings.from_env({"TRACESETS_INSPECT_IN_SERVICE": "maybe"}, data_dir=tmp_path)
    assert str(refused.value) == (
        "TRACESETS_INSPECT_IN_SERVICE must be 1 or 0 (true or false); got 'maybe'"
    )


def test_an_inspection_lease_is_whole_seconds_from_1(tmp_path: Path) -> None:
    assert Settings.from_env({}, data_dir=tmp_path).inspection_lease == 60
    env = {"TRACESETS_INSPECTION_LEASE": "5"}
    assert Settings.from_env(env, data_dir=tmp_path).inspection_lease == 5
    with pytest.raises(SettingsError) as refused:
        Settings.from_env({"TRACESETS_INSPECTION_LEASE": "0"}, data_dir=tmp_path)
    assert "TRACESETS_INSPECTION_LEASE must be a whole number of at least 1" in str(refused.value)


def test_an_upload_waits_up_to_whole_seconds_from_0_to_300(tmp_path: Path) -> None:
    assert Settings.from_env({}, data_dir=tmp_path).upload_wait == 10
    for raw, expected in (("0", 0), ("3", 3), ("300", 300)):
        env = {"TRACESETS_UPLOAD_WAIT": raw}
        assert Settings.from_env(env, data_dir=tmp_path).upload_wait == expected
    for raw in ("301", "-1", "0.5", "soon"):
        with pytest.raises(SettingsError) as refused:
            Settings.from_env({"TRACESETS_UPLOAD_WAIT": raw}, data_dir=tmp_path)
        assert str(refused.value).startswith("TRACESETS_UPLOAD_WAIT must be")


def test_a_body_rate_is_whole_bytes_a_second_from_1(tmp_path: Path) -> None:
    assert Settings.from_env({}, data_dir=tmp_path).min_body_rate == 4096
    env = {"TRACESETS_MIN_BODY_RATE": "1"}
    assert Settings.from_env(env, data_dir=tmp_path).min_body_rate == 1
    for raw in ("0", "-1", "0.5", "1073741825", "slow"):
        with pytest.raises(SettingsError) as refused:
            Settings.from_env({"TRACESETS_MIN_BODY_RATE": raw}, data_dir=tmp_path)
        assert str(refused.value).startswith("TRACESETS_MIN_BODY_RATE must be")


def test_an_idle_connection_is_kept_whole_seconds_from_1_to_3600(tmp_path: Path) -> None:
    assert Settings.from_env({}, data_dir=tmp_path).keep_alive == 65
    env = {"TRACESETS_KEEP_ALIVE": "1"}
    assert Settings.from_env(env, data_dir=tmp_path).keep_alive == 1
    for raw in ("0", "3601", "forever"):
        with pytest.raises(SettingsError) as refused:
            Settings.from_env({"TRACESETS_KEEP_ALIVE": raw}, data_dir=tmp_path)
        assert str(refused.value).startswith("TRACESETS_KEEP_ALIVE must be")


def test_the_serving_process_keeps_idle_connections_as_set(tmp_path: Path) -> None:
    env = {"TRACESETS_KEEP_ALIVE": "7"}
    assert uvicorn_options(Settings.from_env(env, data_dir=tmp_path))["timeout_keep_alive"] == 7
    assert uvicorn_options(Settings.from_env({}, data_dir=tmp_path))["timeout_keep_alive"] == 65


def test_a_quota_is_off_unless_set_to_whole_bytes_from_0(tmp_path: Path) -> None:
    assert Settings.from_env({}, data_dir=tmp_path).quota_bytes is None
    for raw, expected in (("0", 0), ("1073741824", 1 << 30), (" 5 ", 5), ("", None)):
        env = {"TRACESETS_QUOTA_BYTES": raw}
        assert Settings.from_env(env, data_dir=tmp_path).quota_bytes == expected
    for raw in ("-1", "1.5", "1e9", "10GB", "١٢"):
        with pytest.raises(SettingsError) as refused:
            Settings.from_env({"TRACESETS_QUOTA_BYTES": raw}, data_dir=tmp_path)
        assert str(refused.value) == (
            f"TRACESETS_QUOTA_BYTES must be a whole number of at least 0; got {raw!r}"
        )


def test_log_format_and_metrics_access_are_one_of_their_values(tmp_path: Path) -> None:
    default = Settings.from_env({}, data_dir=tmp_path)
    assert (default.log_format, default.metrics) == ("text", "loopback")
    env = {"TRACESETS_LOG_FORMAT": " JSON ", "TRACESETS_METRICS": "token"}
    chosen = Settings.from_env(env, data_dir=tmp_path)
    assert (chosen.log_format, chosen.metrics) == ("json", "token")
    assert uvicorn_options(chosen)["access_log"] is False  # the service writes its own
    assert uvicorn_options(default)["access_log"] is True
    for name, raw, values in (
        ("TRACESETS_LOG_FORMAT", "yaml", "text, json"),
        ("TRACESETS_METRICS", "public", "loopback, token, open, off"),
    ):
        with pytest.raises(SettingsError) as refused:
            Settings.from_env({name: raw}, data_dir=tmp_path)
        assert str(refused.value) == f"{name} must be one of {values}; got {raw!r}"


def test_a_worker_metrics_port_is_off_unless_set_to_a_port(tmp_path: Path) -> None:
    assert Settings.from_env({}, data_dir=tmp_path).worker_metrics_port is None
    for raw, expected in (("9464", 9464), (" 1 ", 1), ("65535", 65535), ("", None)):
        env = {"TRACESETS_WORKER_METRICS_PORT": raw}
        assert Settings.from_env(env, data_dir=tmp_path).worker_metrics_port == expected
    for raw, rule in (
        ("0", "a port from 1 to 65535; got 0"),
        ("65536", "a port from 1 to 65535; got 65536"),
        ("http", "a whole number of at least 0; got 'http'"),
        ("-1", "a whole number of at least 0; got '-1'"),
    ):
        with pytest.raises(SettingsError) as refused:
            Settings.from_env({"TRACESETS_WORKER_METRICS_PORT": raw}, data_dir=tmp_path)
        assert str(refused.value) == f"TRACESETS_WORKER_METRICS_PORT must be {rule}"
