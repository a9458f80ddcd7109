"""Connections and migrations for SQLite and PostgreSQL.

SQLite runs in WAL mode with ``synchronous=FULL``, so a commit survives a crash of
the process or the machine. Its write transactions start with ``BEGIN IMMEDIATE``:
a deferred transaction that later wants to write can fail with "database is locked"
under concurrency, an immediate one simply waits its turn (``busy_timeout``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import Any, TypeVar

from alembic import command
from alembic.config import Config
from sqlalchemy import Connection, Engine, create_engine, event, text

from tracesets.db.group_commit import GroupCommit

T = TypeVar("T")
_MIGRATIONS = Path(__file__).with_name("migrations")
_WRITE = "tracesets_write"


def normalize_url(url: str) -> str:
    """Let people write ``postgresql://``; SQLAlchemy must be told to use psycopg 3."""
    for prefix in ("postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    return url


def sqlite_url(data_dir: Path) -> str:
    return f"sqlite:///{data_dir / 'tracesets.db'}"


def _configure_sqlite(engine: Engine) -> None:
    @event.listens_for(engine, "connect")
    def on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None  # SQLAlchemy's begin event issues BEGIN
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=FULL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA busy_timeout=30000")
        cursor.close()

    @event.listens_for(engine, "begin")
    def on_begin(conn: Connection) -> None:
        immediate = conn.get_execution_options().get(_WRITE, False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")


class Database:
    """One engine; ``read()`` and ``write()`` hand out a connection inside a transaction."""

    def __init__(self, url: str) -> None:
        self.url = normalize_url(url)
        self.is_sqlite = self.url.startswith("sqlite")
        self._write_lock: AbstractContextManager[object] = (
            threading.Lock() if self.is_sqlite else nullcontext()
        )
        self._group: GroupCommit | None = None
        if self.is_sqlite:
            self.engine = create_engine(self.url, pool_size=8, max_overflow=24, pool_timeout=60)
            _configure_sqlite(self.engine)
            self._group = GroupCommit(self.write)
        else:
            self.engine = create_engine(
                self.url, pool_size=10, max_overflow=30, pool_pre_ping=True, pool_timeout=60
            )

    @contextmanager
    def read(self) -> Iterator[Connection]:
        with self.engine.connect() as conn, conn.begin():
            yield conn

    @contextmanager
    def write(self) -> Iterator[Connection]:
        # SQLite has one writer at a time. Threads of this process queue on a lock:
        # left to SQLite's busy handler they would sleep and poll, and throughput
        # collapses under concurrency. Other processes still wait on busy_timeout.
        with (
            self._write_lock,
            self.engine.connect().execution_options(**{_WRITE: True}) as conn,
            conn.begin(),
        ):
            yield conn

    def write_soon(self, work: Callable[[Connection], T]) -> T:
        """Run ``work`` in a write transaction, committed with others' on SQLite (group
        commit: one fsync for a batch); in its own transaction elsewhere."""
        if self._group is None:
            with self.write() as conn:
                return work(conn)
        return self._group.run(work)

    def migrate(self) -> None:
        """Bring the schema to the newest migration; safe to run from every process."""
        with self.engine.connect() as conn:
            if not self.is_sqlite:
                # Several processes may start at once: one migrates, the others wait.
                conn.execute(text("SELECT pg_advisory_lock(7215640321)"))
            try:
                config = Config()
                config.set_main_option("script_location", str(_MIGRATIONS))
                config.attributes["connection"] = conn
                command.upgrade(config, "head")
                conn.commit()
            finally:
                if not self.is_sqlite:
                    conn.execute(text("SELECT pg_advisory_unlock(7215640321)"))
                    conn.commit()

    def dispose(self) -> None:
        self.engine.dispose()
