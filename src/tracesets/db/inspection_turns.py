"""Whose files the inspection queue claims next: the workspaces with work, in turn.

Claimed oldest first across everyone, one workspace's flood of tracesets (or one huge
traceset) held every other workspace's inspections back until it was all read. Each
claim now goes to the workspace with unfinished inspections whose files were claimed
least recently (``inspection_turns.served``), and within it to the oldest traceset.

The workspaces with work are found by a loose scan of the (status, workspace,
traceset_seq) index: one seek per workspace, not one row per queued file or traceset.
The set of workspaces is read from the inspections themselves, and no turn is ever
deleted: an inspection queued while a claim runs can never be left out, and queueing one
writes nothing here.
"""

from __future__ import annotations

from typing import Final

from sqlalchemy import Connection, Insert, bindparam, func, select, text
from sqlalchemy.dialects import postgresql, sqlite

from tracesets.db.tables import inspection_turns

#: Workspaces with a pending or running inspection, least recently served first (never
#: served: first of all); ties, as two processes may take one number at once, by name.
_WAITING: Final = text(
    """
    WITH RECURSIVE busy(status, workspace) AS (
        SELECT queued.status, (
            SELECT i.workspace FROM inspections AS i
            WHERE i.status = queued.status ORDER BY i.workspace LIMIT 1
        )
        FROM (SELECT 'pending' AS status UNION ALL SELECT 'running') AS queued
        UNION ALL
        SELECT busy.status, (
            SELECT i.workspace FROM inspections AS i
            WHERE i.status = busy.status AND i.workspace > busy.workspace
            ORDER BY i.workspace LIMIT 1
        )
        FROM busy WHERE busy.workspace IS NOT NULL
    )
    SELECT DISTINCT busy.workspace, coalesce(turns.served, 0) AS served
    FROM busy LEFT JOIN inspection_turns AS turns ON turns.workspace = busy.workspace
    WHERE busy.workspace IS NOT NULL
    ORDER BY served, busy.workspace
    """
)


def _served(statement: sqlite.Insert | postgresql.Insert) -> Insert:
    after_the_latest = select(
        func.coalesce(func.max(inspection_turns.c.served), 0) + 1
    ).scalar_subquery()
    values = statement.values(workspace=bindparam("workspace"), served=after_the_latest)
    return values.on_conflict_do_update(
        index_elements=[inspection_turns.c.workspace],
        set_={"served": values.excluded.served},
    )


_SERVED_SQLITE: Final = _served(sqlite.insert(inspection_turns))
_SERVED_POSTGRESQL: Final = _served(postgresql.insert(inspection_turns))


def waiting(conn: Connection) -> list[str]:
    """The workspaces with unfinished inspections, the one to serve next first."""
    return [row.workspace for row in conn.execute(_WAITING)]


def served(conn: Connection, workspace: str) -> None:
    """Send the workspace to the back of the turns: files of it were just claimed.

    On PostgreSQL a second process serving the same workspace meanwhile waits for this
    transaction's commit here, the claim's last statement, so it holds nothing another
    claim waits for."""
    statement = _SERVED_SQLITE if conn.dialect.name == "sqlite" else _SERVED_POSTGRESQL
    conn.execute(statement, {"workspace": workspace})
