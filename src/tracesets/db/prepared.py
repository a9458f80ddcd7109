"""Inserts, updates and one-value reads run on SQLite's own driver connection: compiled
once, bound by the driver.

On the hot path (upload-url inserts a traceset and its files) SQLAlchemy's execution of
a statement already compiled and cached (its execution context, parameter processing,
result wrapping) cost more than SQLite's own insert; ``complete`` marking 100,000 files
received spent 2.3 s in it, and a signed PUT's record (a status read, an update) a
sixth of the PUT's time. Here a statement is compiled once
for the parameter names it is given, and each call binds its values with the column
types' own processors (dates as SQLAlchemy's SQLite dialect writes them) and runs it
on the transaction's DBAPI connection. Other backends, and any statement whose
compiled form needs values the caller did not give (a column default), go through
``Connection.execute`` as before. Driver errors are raised as SQLAlchemy's
(``IntegrityError`` and the rest), as ``Connection.execute`` would.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, Insert, Select, Update
from sqlalchemy.exc import DBAPIError, StatementError


@dataclass(frozen=True, slots=True)
class _Compiled:
    sql: str
    names: tuple[str, ...]
    processors: tuple[Callable[[Any], Any] | None, ...]

    def bind(self, row: Mapping[str, Any]) -> tuple[Any, ...]:
        return tuple(
            row[name] if process is None or row[name] is None else process(row[name])
            for name, process in zip(self.names, self.processors, strict=True)
        )


#: By statement and parameter names; None where the driver cannot run it alone.
#: A statement the driver runs.
_Statement = Insert | Update | Select[Any]
_COMPILED: dict[tuple[_Statement, tuple[str, ...]], _Compiled | None] = {}


def _compiled(conn: Connection, statement: _Statement, keys: tuple[str, ...]) -> _Compiled | None:
    dialect = conn.dialect
    if dialect.name != "sqlite":
        return None
    if (statement, keys) in _COMPILED:
        return _COMPILED[(statement, keys)]
    done = statement.compile(dialect=dialect, column_keys=list(keys))
    names = tuple(done.positiontup or ())
    compiled: _Compiled | None = None
    if done.positional and set(names) <= set(keys):
        compiled = _Compiled(
            done.string,
            names,
            tuple(
                done.binds[name].type.dialect_impl(dialect).bind_processor(dialect)
                for name in names
            ),
        )
    _COMPILED[(statement, keys)] = compiled
    return compiled


def _driver_error(conn: Connection, sql: str, params: Any, error: Exception) -> StatementError:
    base = conn.dialect.loaded_dbapi.Error
    return DBAPIError.instance(sql, params, error, base)


def _first_row(conn: Connection, compiled: _Compiled, row: Mapping[str, Any]) -> Any:
    """The first row (None for none) of ``compiled`` run with ``row``'s values by the
    transaction's driver connection; its errors raised as SQLAlchemy's."""
    driver = conn.connection.driver_connection
    assert driver is not None
    params = compiled.bind(row)
    try:
        return driver.execute(compiled.sql, params).fetchone()
    except conn.dialect.loaded_dbapi.Error as error:
        raise _driver_error(conn, compiled.sql, params, error) from error


def insert_one(conn: Connection, statement: Insert, row: Mapping[str, Any]) -> Any:
    """Insert one row with ``statement`` (which returns one column); that column's value."""
    compiled = _compiled(conn, statement, tuple(row))
    if compiled is None:
        return conn.execute(statement, dict(row)).scalar_one()
    found = _first_row(conn, compiled, row)
    if found is None:  # RETURNING always answers a row; say so if it did not
        raise RuntimeError(f"{compiled.sql} returned no row")
    return found[0]


def execute_many(
    conn: Connection, statement: Insert | Update, rows: Sequence[Mapping[str, Any]]
) -> None:
    """Run ``statement`` for each of ``rows`` (all with the same keys), in one executemany."""
    if not rows:
        return
    compiled = _compiled(conn, statement, tuple(rows[0]))
    if compiled is None:
        conn.execute(statement, [dict(row) for row in rows])
        return
    driver = conn.connection.driver_connection
    assert driver is not None
    params = [compiled.bind(row) for row in rows]
    try:
        driver.executemany(compiled.sql, params)
    except conn.dialect.loaded_dbapi.Error as error:
        raise _driver_error(conn, compiled.sql, params, error) from error


def scalar(conn: Connection, statement: Select[Any], params: Mapping[str, Any]) -> Any:
    """The first column of ``statement``'s first row, as the driver returns it (plain
    columns only); None when there is no row."""
    compiled = _compiled(conn, statement, tuple(params))
    if compiled is None:
        return conn.execute(statement, dict(params)).scalar()
    found = _first_row(conn, compiled, params)
    return None if found is None else found[0]
