"""Bearer tokens: minted at random, stored only as their SHA-256.

A token has 256 bits of entropy, so one unsalted SHA-256 is enough to make the
stored hashes useless to whoever reads the database (no dictionary to try).
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import UTC, datetime

from tracesets.db import queries
from tracesets.db.engine import Database

PREFIX = "tsk_"


def mint() -> str:
    return PREFIX + secrets.token_urlsafe(32)


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def create(db: Database, *, workspace: str, name: str | None = None) -> str:
    """A new token for ``workspace``; the only time its value is seen."""
    token = mint()
    with db.write() as conn:
        queries.insert_token(
            conn,
            workspace=workspace,
            token_hash=hash_token(token),
            name=name,
            now=datetime.now(UTC),
        )
    return token


def ensure(db: Database, token: str, *, workspace: str, name: str) -> bool:
    """Make ``token`` valid for ``workspace`` (the bootstrap token); True if it was added."""
    digest = hash_token(token)
    with db.write() as conn:
        if queries.has_token(conn, digest):
            return False
        queries.insert_token(
            conn, workspace=workspace, token_hash=digest, name=name, now=datetime.now(UTC)
        )
    return True


def workspace_of(db: Database, token: str) -> str | None:
    with db.read() as conn:
        return queries.workspace_of_token(conn, hash_token(token))


def any_exist(db: Database) -> bool:
    with db.read() as conn:
        return queries.any_token(conn)
