"""The tables, as SQLAlchemy Core sees them. The migrations create them; this mirrors them.

A traceset has an internal ``seq`` (an increasing integer that orders the list and
makes its cursor) and a public opaque ``id``. Stored metadata is the compact JSON
text the rules produced, never re-encoded, so it comes back byte for byte.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    DateTime,
    ForeignKey,
    Integer,
    MetaData,
    String,
    Table,
    Text,
)

#: SQLite only auto-increments an INTEGER PRIMARY KEY; PostgreSQL gets a BIGINT identity.
Seq = BigInteger().with_variant(Integer(), "sqlite")

metadata = MetaData()

tokens = Table(
    "tokens",
    metadata,
    Column("id", Seq, primary_key=True, autoincrement=True),
    Column("workspace", String(128), nullable=False),
    Column("token_hash", String(64), nullable=False, unique=True),
    Column("name", String(256), nullable=True),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("revoked_at", DateTime(timezone=True), nullable=True),
)

tracesets = Table(
    "tracesets",
    metadata,
    Column("seq", Seq, primary_key=True, autoincrement=True),
    Column("id", String(32), nullable=False, unique=True),
    Column("workspace", String(128), nullable=False),
    Column("name", String(256), nullable=False),
    Column("description", Text, nullable=True),
    Column("status", String(16), nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("updated_at", DateTime(timezone=True), nullable=False),
    Column("promoted_at", DateTime(timezone=True), nullable=True),
    Column("workload_metadata", Text, nullable=True),
    Column("rank_count", BigInteger, nullable=True),
)

files = Table(
    "files",
    metadata,
    Column(
        "traceset_seq",
        Seq,
        ForeignKey("tracesets.seq", ondelete="CASCADE"),
        primary_key=True,
    ),
    Column("idx", Integer, primary_key=True),
    Column("name", String(1024), nullable=False),
    Column("size", BigInteger, nullable=False),
    Column("role", String(16), nullable=False),
    Column("sha256_declared", String(64), nullable=True),
    Column("sha256", String(64), nullable=True),
    Column("received", Boolean, nullable=False, default=False),
    Column("received_at", DateTime(timezone=True), nullable=True),
)
