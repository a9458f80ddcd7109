"""The one settings object, read once at start from the environment and the command line.

| variable | default | meaning |
| --- | --- | --- |
| ``TRACESETS_DATA_DIR`` | ``~/.local/share/tracesets`` | SQLite database, files and the generated secret |
| ``DATABASE_URL`` | SQLite in the data folder | ``postgresql://…`` moves the metadata to PostgreSQL |
| ``TRACESETS_SECRET`` | generated into the data folder | signs upload and download URLs (≥ 32 bytes) |
| ``TRACESETS_BOOTSTRAP_TOKEN`` | none | a token of the default workspace that exists from start |
| ``TRACESETS_PUBLIC_URL`` | the address the service listens on | base of the signed URLs handed out (never the request's ``Host``) |
| ``TRACESETS_UPLOAD_URL_TTL`` | ``21600`` (6 hours) | how long an upload URL stays valid, in seconds |
| ``TRACESETS_DOWNLOAD_URL_TTL`` | ``900`` (15 minutes) | how long a download URL stays valid, in seconds |
| ``TRACESETS_STORAGE_URL`` | the data folder | ``s3://BUCKET/PREFIX`` moves the files to S3 (``AWS_*`` settings) |
| ``TRACESETS_MULTIPART_THRESHOLD`` | ``67108864`` (64 MiB) | S3: larger files are uploaded in parts |
| ``TRACESETS_PART_SIZE`` | ``67108864`` (64 MiB) | S3: part size (at least 5 MiB; grows so no file needs >1,000 parts) |
| ``TRACESETS_PENDING_TTL`` | ``604800`` (7 days) | pending tracesets older than this are aborted and removed |
| ``TRACESETS_MAX_BODY_BYTES`` | ``4194304`` (4 MiB) | largest JSON request body (413 beyond) |
| ``TRACESETS_MAX_FILES`` | ``131072`` | most files in one traceset (at most 131,072; 10,000 a request) |
| ``TRACESETS_MAX_METADATA_BYTES`` | ``65536`` | largest serialized workloadMetadata (at most 65,536) |
| ``TRACESETS_RATE_LIMIT`` | ``100`` | requests a second per token, on average (429 beyond; ``0.5``: one in 2 s) |
| ``TRACESETS_RATE_BURST`` | ``200`` | requests a token may send at once before the rate applies |
| ``TRACESETS_HEADER_TIMEOUT`` | ``20`` | seconds a client has to send a request's headers; then the connection is closed |
| ``TRACESETS_KEEP_ALIVE`` | ``65`` | seconds an idle connection is kept open between requests (longer than clients' and proxies' own) |
| ``TRACESETS_BODY_IDLE_TIMEOUT`` | ``60`` | seconds a request body may stop moving (408 beyond); also the age of a dead upload's temporary file before it is swept |
| ``TRACESETS_MIN_BODY_RATE`` | ``4096`` | bytes a second a request body must average over each body idle timeout it is waited for (408 beyond) |
| ``TRACESETS_MAX_CONCURRENT_UPLOADS`` | ``128`` | file uploads (signed PUTs) one process receives at once (beyond, a wait for a slot); one traceset's at most half, one file's one |
| ``TRACESETS_UPLOAD_WAIT`` | ``10`` | seconds an upload past that bound waits for a slot (503 after; ``0``: at once) |
| ``TRACESETS_MAX_CONNECTIONS`` | from the open-file limit | requests one process serves at once (503 beyond); more idle connections are closed |
| ``TRACESETS_INSPECT_IN_SERVICE`` | ``1`` | ``0``: service processes leave inspection to ``tracesets worker`` processes |
| ``TRACESETS_INSPECTION_LEASE`` | ``60`` | seconds a dead process's claim on a file it was inspecting holds before another takes it over |
| ``TRACESETS_INSPECT_FILE_CPU_SECONDS`` | ``300`` | CPU seconds reading one file may take (``0``: stop at the first check); past it the file is a finding |
| ``TRACESETS_REGRESSION_STEP_PCT`` | ``5`` | a traceset whose median step is more than this % slower than its baseline's regressed |
| ``TRACESETS_REGRESSION_IDLE_POINTS`` | ``5`` | … or whose GPU idle % is more than this many points higher |
| ``TRACESETS_QUOTA_BYTES`` | none | bytes a workspace may hold, stored or declared in pending tracesets (413 beyond) |
| ``TRACESETS_LOG_FORMAT`` | ``text`` | ``json``: one JSON object a line, one line a request (uvicorn's access line off) and a background event |
| ``TRACESETS_METRICS`` | ``loopback`` | who may read ``/metrics``: ``loopback`` clients, ``token`` (the metrics scope), ``open``, or ``off`` (404) |
| ``TRACESETS_WORKER_METRICS_PORT`` | none | ``tracesets worker`` serves its own metrics on this port (``--metrics-port``) |
"""

from __future__ import annotations

import contextlib
import math
import os
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from tracesets.vocabulary import MAX_BODY_BYTES, MAX_FILES_PER_TRACESET, MAX_METADATA_BYTES

DEFAULT_WORKSPACE = "default"
#: The folder where every process of ``tracesets serve`` keeps its metrics
#: (``tracesets.metrics``): prometheus_client reads this variable when it is imported.
MULTIPROC_DIR = "PROMETHEUS_MULTIPROC_DIR"
MIB = 1024 * 1024


class SettingsError(ValueError):
    """A setting is missing, malformed or unsafe; the message names it."""


def default_data_dir() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "tracesets"


def _positive_int(env: Mapping[str, str], name: str, default: int) -> int:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    if not raw.isdigit() or int(raw) < 1:
        raise SettingsError(f"{name} must be a whole number of at least 1; got {raw!r}")
    return int(raw)


def _positive_number(env: Mapping[str, str], name: str, default: float) -> float:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise SettingsError(f"{name} must be a number above 0; got {raw!r}")
    return value


def _switch(env: Mapping[str, str], name: str, default: bool) -> bool:
    raw = (env.get(name) or "").strip().lower()
    if raw == "":
        return default
    if raw not in ("0", "1", "false", "true", "no", "yes"):
        raise SettingsError(f"{name} must be 1 or 0 (true or false); got {raw!r}")
    return raw in ("1", "true", "yes")


def _whole_or_none(env: Mapping[str, str], name: str) -> int | None:
    """A whole number of at least 0, or None when unset (the setting is off)."""
    raw = (env.get(name) or "").strip()
    if raw == "":
        return None
    if not (raw.isascii() and raw.isdigit()):
        raise SettingsError(f"{name} must be a whole number of at least 0; got {raw!r}")
    return int(raw)


def _port_or_none(env: Mapping[str, str], name: str) -> int | None:
    """A TCP port to listen on, or None when unset (nothing listens)."""
    port = _whole_or_none(env, name)
    if port is not None and not 1 <= port <= 65_535:
        raise SettingsError(f"{name} must be a port from 1 to 65535; got {port}")
    return port


def _choice(env: Mapping[str, str], name: str, choices: tuple[str, ...]) -> str:
    """One of ``choices`` (any case), the first when unset."""
    raw = (env.get(name) or "").strip().lower()
    if raw == "":
        return choices[0]
    if raw not in choices:
        raise SettingsError(f"{name} must be one of {', '.join(choices)}; got {raw!r}")
    return raw


#: TRACESETS_LOG_FORMAT's values, the default first.
LOG_FORMATS = ("text", "json")
#: TRACESETS_METRICS's values, the default first.
METRICS_ACCESS = ("loopback", "token", "open", "off")


def _bounded(env: Mapping[str, str], name: str, default: int, low: int, high: int) -> int:
    raw = env.get(name)
    if low == 0 and raw is not None and raw.isdigit() and int(raw) == 0:
        return 0
    value = _positive_int(env, name, default)
    if not low <= value <= high:
        raise SettingsError(f"{name} must be from {low:,} to {high:,}; got {value:,}")
    return value


def file_cpu_seconds(env: Mapping[str, str]) -> int:
    """CPU seconds reading one file may take. Read here, so the service and the workers
    refuse a wrong value at start, and again by each process that reads files (the pool's
    processes inherit the environment, not the settings object)."""
    return _bounded(env, "TRACESETS_INSPECT_FILE_CPU_SECONDS", 300, 0, 86_400)


@dataclass(frozen=True)
class Settings:
    data_dir: Path
    database_url: str
    secret: bytes | None
    bootstrap_token: str | None
    public_url: str | None
    upload_url_ttl: int
    download_url_ttl: int
    storage_url: str | None = None
    multipart_threshold: int = 64 * MIB
    part_size: int = 64 * MIB
    pending_ttl: int = 7 * 24 * 3600
    max_body_bytes: int = MAX_BODY_BYTES
    max_files: int = MAX_FILES_PER_TRACESET
    max_metadata_bytes: int = MAX_METADATA_BYTES
    rate_limit: float = 100
    rate_burst: int = 200
    header_timeout: int = 20
    keep_alive: int = 65
    body_idle_timeout: int = 60
    min_body_rate: int = 4096
    max_concurrent_uploads: int = 128
    upload_wait: int = 10
    max_connections: int | None = None  # None: what the open-file limit allows
    inspect_in_service: bool = True
    inspection_lease: int = 60
    inspect_file_cpu_seconds: int = 300
    regression_step_pct: float = 5.0
    regression_idle_points: float = 5.0
    quota_bytes: int | None = None  # None: no quota
    log_format: str = "text"
    metrics: str = "loopback"
    worker_metrics_port: int | None = None  # None: a worker serves no metrics

    @classmethod
    def from_env(
        cls, env: Mapping[str, str] | None = None, *, data_dir: Path | None = None
    ) -> Settings:
        env = os.environ if env is None else env
        folder = (
            data_dir or Path(env.get("TRACESETS_DATA_DIR") or default_data_dir())
        ).expanduser()
        secret = env.get("TRACESETS_SECRET") or None
        if secret is not None and len(secret.encode()) < 32:
            raise SettingsError("TRACESETS_SECRET must be at least 32 bytes long")
        token = env.get("TRACESETS_BOOTSTRAP_TOKEN") or None
        if token is not None and len(token) < 16:
            raise SettingsError("TRACESETS_BOOTSTRAP_TOKEN must be at least 16 characters long")
        public_url = (env.get("TRACESETS_PUBLIC_URL") or "").rstrip("/") or None
        storage_url = env.get("TRACESETS_STORAGE_URL") or None
        if storage_url is not None and not storage_url.startswith("s3://"):
            raise SettingsError(
                f"TRACESETS_STORAGE_URL must look like s3://BUCKET/PREFIX; got {storage_url!r}"
            )
        part_size = _positive_int(env, "TRACESETS_PART_SIZE", 64 * MIB)
        if part_size < 5 * MIB:
            raise SettingsError(
                "TRACESETS_PART_SIZE must be at least 5 MiB (5242880): S3's smallest part"
            )
        return cls(
            data_dir=folder,
            database_url=env.get("DATABASE_URL") or f"sqlite:///{folder / 'tracesets.db'}",
            secret=secret.encode() if secret else None,
            bootstrap_token=token,
            public_url=public_url,
            upload_url_ttl=_positive_int(env, "TRACESETS_UPLOAD_URL_TTL", 6 * 3600),
            download_url_ttl=_positive_int(env, "TRACESETS_DOWNLOAD_URL_TTL", 900),
            storage_url=storage_url,
            multipart_threshold=_positive_int(env, "TRACESETS_MULTIPART_THRESHOLD", 64 * MIB),
            part_size=part_size,
            pending_ttl=_positive_int(env, "TRACESETS_PENDING_TTL", 7 * 24 * 3600),
            max_body_bytes=_bounded(
                env, "TRACESETS_MAX_BODY_BYTES", MAX_BODY_BYTES, 1024, 64 * MIB
            ),
            max_files=_bounded(
                env, "TRACESETS_MAX_FILES", MAX_FILES_PER_TRACESET, 1, MAX_FILES_PER_TRACESET
            ),
            max_metadata_bytes=_bounded(
                env, "TRACESETS_MAX_METADATA_BYTES", MAX_METADATA_BYTES, 64, MAX_METADATA_BYTES
            ),
            rate_limit=_positive_number(env, "TRACESETS_RATE_LIMIT", 100),
            rate_burst=_positive_int(env, "TRACESETS_RATE_BURST", 200),
            header_timeout=_bounded(env, "TRACESETS_HEADER_TIMEOUT", 20, 1, 3600),
            keep_alive=_bounded(env, "TRACESETS_KEEP_ALIVE", 65, 1, 3600),
            body_idle_timeout=_bounded(env, "TRACESETS_BODY_IDLE_TIMEOUT", 60, 1, 3600),
            min_body_rate=_bounded(env, "TRACESETS_MIN_BODY_RATE", 4096, 1, 1024 * MIB),
            max_concurrent_uploads=_positive_int(env, "TRACESETS_MAX_CONCURRENT_UPLOADS", 128),
            upload_wait=_bounded(env, "TRACESETS_UPLOAD_WAIT", 10, 0, 300),
            max_connections=_positive_int(env, "TRACESETS_MAX_CONNECTIONS", 0) or None,
            inspect_in_service=_switch(env, "TRACESETS_INSPECT_IN_SERVICE", True),
            inspection_lease=_bounded(env, "TRACESETS_INSPECTION_LEASE", 60, 1, 86_400),
            inspect_file_cpu_seconds=file_cpu_seconds(env),
            regression_step_pct=_positive_number(env, "TRACESETS_REGRESSION_STEP_PCT", 5.0),
            regression_idle_points=_positive_number(env, "TRACESETS_REGRESSION_IDLE_POINTS", 5.0),
            quota_bytes=_whole_or_none(env, "TRACESETS_QUOTA_BYTES"),
            log_format=_choice(env, "TRACESETS_LOG_FORMAT", LOG_FORMATS),
            metrics=_choice(env, "TRACESETS_METRICS", METRICS_ACCESS),
            worker_metrics_port=_port_or_none(env, "TRACESETS_WORKER_METRICS_PORT"),
        )

    def signing_secret(self) -> bytes:
        """The setting, else a secret generated once into the data folder (mode 0600)."""
        if self.secret is not None:
            return self.secret
        path = self.data_dir / "secret"
        if not path.exists():
            self.data_dir.mkdir(parents=True, exist_ok=True)
            # Written aside and linked into place, so a process starting at the same
            # moment reads either no secret or the whole one, and all agree on it.
            draft = self.data_dir / f".secret-{secrets.token_hex(8)}"
            fd = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as out:
                out.write(secrets.token_hex(32).encode())
                out.flush()
                os.fsync(out.fileno())
            with contextlib.suppress(FileExistsError):
                os.link(draft, path)
            draft.unlink()
        return path.read_bytes().strip()
