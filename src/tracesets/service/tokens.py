"""Bearer tokens: minted at random, stored only as their SHA-256, scoped, revocable.

A token has 256 bits of entropy, so one unsalted SHA-256 is enough to make the
stored hashes useless to whoever reads the database (no dictionary to try). A token
opens one workspace and carries scopes: ``read`` (get, list, download), ``write``
(upload, complete, delete) and ``promote``; or ``metrics`` (``/metrics`` under
``TRACESETS_METRICS=token``), given only when asked for: a scraper's token opens nothing
else, and a workspace's tokens do not read the whole service's figures.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Final

from sqlalchemy import bindparam, insert, select, update

from tracesets.db.engine import Database
from tracesets.db.tables import tokens

PREFIX: Final = "tsk_"
#: A new token's scopes unless others are asked for.
SCOPES: Final = ("read", "write", "promote")
ALL_SCOPES: Final = (*SCOPES, "metrics")

_CALLER = select(tokens.c.workspace, tokens.c.scopes).where(
    tokens.c.token_hash == bindparam("token_hash"), tokens.c.revoked_at.is_(None)
)


@dataclass(frozen=True, slots=True)
class Caller:
    """Who a request comes from: the workspace its token opens, and what it may do."""

    workspace: str
    scopes: frozenset[str]
    token_hash: str  # the key of its rate limit: the token itself is never kept


@dataclass(frozen=True, slots=True)
class TokenInfo:
    id: int
    workspace: str
    name: str | None
    scopes: tuple[str, ...]
    created_at: datetime
    revoked_at: datetime | None


def mint() -> str:
    return PREFIX + secrets.token_urlsafe(32)


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def _scopes_text(scopes: Iterable[str]) -> str:
    chosen = set(scopes)
    unknown = chosen - set(ALL_SCOPES)
    if unknown or not chosen:
        raise ValueError(f"scopes must be some of {', '.join(ALL_SCOPES)}; got {sorted(chosen)}")
    return " ".join(s for s in ALL_SCOPES if s in chosen)


def _insert(db: Database, digest: str, workspace: str, name: str | None, scopes: str) -> None:
    with db.write() as conn:
        conn.execute(
            insert(tokens).values(
                workspace=workspace,
                token_hash=digest,
                name=name,
                scopes=scopes,
                created_at=datetime.now(UTC),
            )
        )


def create(
    db: Database, *, workspace: str, name: str | None = None, scopes: Iterable[str] = SCOPES
) -> str:
    """A new token for ``workspace``; the only time its value is seen."""
    token = mint()
    _insert(db, hash_token(token), workspace, name, _scopes_text(scopes))
    return token


def ensure(db: Database, token: str, *, workspace: str, name: str) -> bool:
    """Make ``token`` valid for ``workspace`` with every scope (the bootstrap token).

    True if it was added. A bootstrap token that was revoked stays revoked.
    """
    digest = hash_token(token)
    with db.read() as conn:
        known = conn.execute(select(tokens.c.id).where(tokens.c.token_hash == digest)).first()
    if known is not None:
        return False
    _insert(db, digest, workspace, name, _scopes_text(SCOPES))
    return True


def authenticate(db: Database, token: str) -> Caller | None:
    """The caller a token stands for, or None for an unknown or revoked token."""
    digest = hash_token(token)
    row = db.fetch_one(_CALLER, {"token_hash": digest})  # token_hash is unique: one row at most
    if row is None:
        return None
    workspace, scopes = row
    return Caller(workspace, frozenset(scopes.split()), digest)


def revoke(db: Database, *, token: str | None = None, token_id: int | None = None) -> bool:
    """Revoke a token, named by its value or its id; False if there is no such live token."""
    where = (
        tokens.c.token_hash == hash_token(token) if token is not None else tokens.c.id == token_id
    )
    with db.write() as conn:
        done = conn.execute(
            update(tokens)
            .where(where, tokens.c.revoked_at.is_(None))
            .values(revoked_at=datetime.now(UTC))
        )
    return done.rowcount > 0


def listed(db: Database, *, workspace: str | None = None) -> list[TokenInfo]:
    """Every token (of ``workspace``), oldest first; never their values."""
    query = select(tokens).order_by(tokens.c.id)
    if workspace is not None:
        query = query.where(tokens.c.workspace == workspace)
    with db.read() as conn:
        rows = conn.execute(query).all()
    return [
        TokenInfo(
            id=row.id,
            workspace=row.workspace,
            name=row.name,
            scopes=tuple(row.scopes.split()),
            created_at=row.created_at,
            revoked_at=row.revoked_at,
        )
        for row in rows
    ]


def any_exist(db: Database) -> bool:
    with db.read() as conn:
        return conn.execute(select(tokens.c.id).limit(1)).first() is not None
