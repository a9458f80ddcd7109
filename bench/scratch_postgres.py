"""A scratch PostgreSQL database for a bench: created beside a given one, dropped after.

The benches never write into the database they are pointed at (the test suite may be
using it): they create ``tracesets_bench_<what>_<pid>`` on the same server, which needs
a role with CREATEDB (scripts/with-scaled-services makes one), and drop it at the end.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import create_engine, make_url

from tracesets.db.engine import normalize_url

#: What scripts/with-scaled-services exports; the benches' default PostgreSQL server.
URL_VARIABLE = "TRACESETS_TEST_DATABASE_URL"


def default_url() -> str | None:
    return os.environ.get(URL_VARIABLE) or None


@contextmanager
def scratch_database(url: str, what: str) -> Iterator[str]:
    """The URL of a new, empty database on ``url``'s server; dropped when the block ends."""
    admin = create_engine(normalize_url(url), isolation_level="AUTOCOMMIT")
    name = f"tracesets_bench_{what}_{os.getpid()}"
    with admin.connect() as conn:
        conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}"')
        conn.exec_driver_sql(f'CREATE DATABASE "{name}"')
    try:
        yield make_url(normalize_url(url)).set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.dispose()
