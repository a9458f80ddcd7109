"""Alembic environment: the service runs the migrations itself at start."""

from __future__ import annotations

from alembic import context
from sqlalchemy.engine import Connection

from tracesets.db.tables import metadata

connection: Connection = context.config.attributes["connection"]
context.configure(
    connection=connection,
    target_metadata=metadata,
    render_as_batch=connection.dialect.name == "sqlite",
)
with context.begin_transaction():
    context.run_migrations()
