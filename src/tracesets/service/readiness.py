"""Whether this process can serve requests now: what ``GET /readyz`` checks.

Three cheap calls, each naming what fails: the database answers a trivial query, its
schema is at this version's newest migration (a database restored from an older backup,
or migrated ahead by a newer version of Tracesets, would make requests fail in ways
that say nothing of why), and the file store answers (``BlobStore.check``).
"""

from __future__ import annotations

import logging

from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from tracesets.db.engine import Database, head_revision
from tracesets.problems import Problem
from tracesets.storage.base import BlobStore

log = logging.getLogger("tracesets")


def _revision(db: Database) -> str | None:
    """The database's migration; None when it has none. Raises when it does not answer."""
    with db.read() as conn:
        conn.execute(text("SELECT 1"))
    try:
        with db.read() as conn:
            found = conn.execute(text("SELECT version_num FROM alembic_version")).scalar()
    except DBAPIError:  # no such table: never migrated
        return None
    return None if found is None else str(found)


def _migration_problem(revision: str | None) -> Problem | None:
    head = head_revision()
    if revision == head:
        return None
    if revision is not None and revision > head:
        said = f"is at migration {revision}, ahead of this version's {head}: run the version "
        said += "of Tracesets that migrated it"
    else:
        said = "has no migration applied" if revision is None else f"is at migration {revision}"
        said += f", behind this version's {head}: restart the service, which migrates at start"
    return Problem("migrations", revision, f"The database {said}")


def problems(db: Database, store: BlobStore) -> list[Problem]:
    """What keeps this process from serving requests; empty when it is ready."""
    found: list[Problem] = []
    try:
        migration = _migration_problem(_revision(db))
    except Exception as exc:  # any failure to answer means not ready, whatever its kind
        log.warning("readiness: the database did not answer: %s", exc)
        found.append(
            Problem("database", None, f"The database did not answer ({type(exc).__name__})")
        )
    else:
        if migration is not None:
            found.append(migration)
    try:
        store.check()
    except Exception as exc:
        log.warning("readiness: the file store did not answer: %s", exc)
        found.append(
            Problem("store", None, f"The file store did not answer ({type(exc).__name__})")
        )
    return found
