"""Connections and migrations for SQLite and PostgreSQL.

SQLite runs in WAL mode with ``synchronous=FULL``, so a commit survives a crash of
the process or the machine. Its write transactions start with ``BEGIN IMMEDIATE``:
a deferred transaction that later wants to write can fail with "database is locked"
under concurrency, an immediate one simply waits its turn (``busy_timeout``).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import sqlite3
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy import Connection, Engine, Select, create_engine, event, text
from sqlalchemy.exc import DBAPIError

from tracesets.db.group_commit import GroupCommit
from tracesets.db.loop_commit import HeldWrite, LoopCommit

T = TypeVar("T")
_MIGRATIONS = Path(__file__).with_name("migrations")
_WRITE = "tracesets_write"
#: A connection whose caller begins its transactions itself (the event loop's writes, on
#: the driver: SQLAlchemy's statement for it cost more than an insert).
_BEGUN = "tracesets_begun"
_BUSY_TIMEOUT_MS = 30000


def normalize_url(url: str) -> str:
    """Let people write ``postgresql://``; SQLAlchemy must be told to use psycopg 3."""
    for prefix in ("postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    return url


def head_revision() -> str:
    """The newest migration's revision: each one is ``NNNN_what.py`` with revision NNNN."""
    return max(path.name[:4] for path in (_MIGRATIONS / "versions").glob("[0-9]" * 4 + "_*.py"))


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
        cursor.execute(f"PRAGMA busy_timeout={_BUSY_TIMEOUT_MS}")
        cursor.close()

    @event.listens_for(engine, "begin")
    def on_begin(conn: Connection) -> None:
        options = conn.get_execution_options()
        if not options.get(_BEGUN, False):
            conn.exec_driver_sql("BEGIN IMMEDIATE" if options.get(_WRITE, False) else "BEGIN")


def _begin_at_once(driver: sqlite3.Connection) -> bool:
    """``BEGIN IMMEDIATE`` on ``driver`` if no other connection is writing; False if one is."""
    driver.execute("PRAGMA busy_timeout=0")
    try:
        driver.execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError as error:
        if error.sqlite_errorcode != sqlite3.SQLITE_BUSY:
            raise
        return False
    finally:
        driver.execute(f"PRAGMA busy_timeout={_BUSY_TIMEOUT_MS}")
    return True


class Database:
    """One engine; ``read()`` and ``write()`` hand out a connection inside a transaction."""

    def __init__(self, url: str) -> None:
        self.url = normalize_url(url)
        self.is_sqlite = self.url.startswith("sqlite")
        self._writer = threading.Lock()  # SQLite's one writer, among this process's threads
        self._write_lock: AbstractContextManager[object] = (
            self._writer if self.is_sqlite else nullcontext()
        )
        self._group: GroupCommit | None = None
        self._loop_commit: LoopCommit | None = None
        self._loop_connection: Connection | None = None
        self._committer: concurrent.futures.ThreadPoolExecutor | None = None
        self._quick = threading.local()  # SQLite: each thread's own plain reading connection
        self._quick_all: list[sqlite3.Connection] = []
        self._quick_lock = threading.Lock()
        self._compiled: dict[Select[Any], tuple[str, tuple[str, ...]]] = {}
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

    def fetch_one(
        self, statement: Select[Any], params: Mapping[str, Any]
    ) -> tuple[Any, ...] | None:
        """The first row of a one-row read, as the driver returns it (plain columns only).

        On SQLite it runs on the calling thread's own connection in autocommit mode, one
        statement with no BEGIN and COMMIT around it and no pool: a few microseconds, cheap
        enough for the event loop, where ``read()`` costs a fifth of a millisecond. WAL
        gives the statement a snapshot of the last commit, as a transaction would.
        """
        if not self.is_sqlite:
            with self.read() as conn:
                row = conn.execute(statement, dict(params)).first()
            return None if row is None else tuple(row)
        sql, names = self._compile(statement)
        found: tuple[Any, ...] | None = (
            self._quick_connection().execute(sql, [params[name] for name in names]).fetchone()
        )
        return found

    def _compile(self, statement: Select[Any]) -> tuple[str, tuple[str, ...]]:
        compiled = self._compiled.get(statement)
        if compiled is None:
            done = statement.compile(dialect=self.engine.dialect)
            compiled = (done.string, tuple(done.positiontup or ()))
            self._compiled[statement] = compiled
        return compiled

    def _quick_connection(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._quick, "conn", None)
        if conn is None:
            conn = sqlite3.connect(
                self.engine.url.database or "", isolation_level=None, check_same_thread=False
            )
            conn.execute("PRAGMA busy_timeout=30000")
            self._quick.conn = conn
            with self._quick_lock:
                self._quick_all.append(conn)
        return conn

    def _begin_now(self) -> HeldWrite | None:
        """A write transaction begun at once on the loop's own connection by the holder of
        this process's writer lock (``LoopCommit``), or None when another process is
        writing (SQLite). The lock is the caller's until the transaction ends."""
        conn = self._loop_connection
        if conn is None or conn.invalidated:
            conn = self.engine.connect().execution_options(**{_BEGUN: True})
            self._loop_connection = conn
        driver = conn.connection.driver_connection
        assert isinstance(driver, sqlite3.Connection)
        if not _begin_at_once(driver):
            return None
        try:
            transaction = conn.begin()  # SQLAlchemy's account of the driver's transaction
        except BaseException:
            driver.rollback()
            raise
        return HeldWrite(conn, transaction, self._writer.release)

    async def write_async(self, work: Callable[[Connection], T]) -> T:
        """``write_soon`` for a caller on the event loop, which awaits the commit and never
        the disk. On SQLite the work runs on the loop when no other writer is busy
        (``LoopCommit``), on the group-commit thread otherwise; on PostgreSQL on a worker
        thread. The work must be quick: a few rows read or written."""
        if self._group is None:
            return await asyncio.to_thread(self.write_soon, work)
        loop = asyncio.get_running_loop()
        writer = self._loop_writer(loop)
        if writer is not None:
            return await writer.submit(work)
        done: asyncio.Future[T] = loop.create_future()
        self._group.hand([(work, done)])
        return await done

    def _loop_writer(self, loop: asyncio.AbstractEventLoop) -> LoopCommit | None:
        """This loop's ``LoopCommit``: one loop at a time has one (a serving process has one
        loop); None for a caller on another loop while that one lives, whose work then runs
        on the group-commit thread."""
        assert self._group is not None
        current = self._loop_commit
        if current is not None and current.loop is loop:
            return current
        if current is not None and not current.loop.is_closed():
            return None
        if self._committer is None:
            self._committer = concurrent.futures.ThreadPoolExecutor(
                1, thread_name_prefix="loop-commit"
            )
        self._loop_commit = LoopCommit(
            loop, self._writer, self._begin_now, self._group, self._committer
        )
        return self._loop_commit

    def write_later(self, work: Callable[[Connection], T]) -> concurrent.futures.Future[T]:
        """``write_soon`` without waiting: its outcome, once committed, in a future. On
        PostgreSQL the work runs now, in the calling thread."""
        if self._group is not None:
            return self._group.submit(work)
        done: concurrent.futures.Future[T] = concurrent.futures.Future()
        try:
            done.set_result(self.write_soon(work))
        except Exception as exc:
            done.set_exception(exc)
        return done

    def write_soon(self, work: Callable[[Connection], T]) -> T:
        """Run ``work`` in a write transaction, committed with others' on SQLite (group
        commit: one fsync for a batch); in its own transaction elsewhere."""
        if self._group is None:
            with self.write() as conn:
                return work(conn)
        return self._group.run(work)

    def migrate(self) -> None:
        """Bring the schema to the newest migration; safe to run from every process.

        A database already there is left alone without importing Alembic (and Mako):
        some 10 MiB that a serving process would otherwise hold for its whole life.
        """
        if self._revision() == head_revision():
            return
        from alembic import command
        from alembic.config import Config

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

    def _revision(self) -> str | None:
        """The revision the database is at, or None (a new database, or an unknown one)."""
        with self.engine.connect() as conn:
            try:
                row = conn.execute(text("SELECT version_num FROM alembic_version")).first()
            except DBAPIError:  # no such table: a database never migrated
                return None
            finally:
                conn.rollback()
        return None if row is None else str(row[0])

    def dispose(self) -> None:
        if self._committer is not None:
            self._committer.shutdown(wait=True)  # a commit under way finishes first
            self._committer = None
        self._loop_commit = None
        if self._loop_connection is not None:
            self._loop_connection.close()
            self._loop_connection = None
        for conn in self._quick_all:
            conn.close()
        self._quick_all.clear()
        self._quick = threading.local()
        self.engine.dispose()
