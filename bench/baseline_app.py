"""The bare endpoint bench/upload_url.py measures the service against.

One ``async def`` route: read the body, ``json.loads`` it, insert it as a row into
SQLite with the service's durability settings (WAL, ``synchronous=FULL``), commit,
answer 201. No validation, no token, no signing: the floor a Python stack costs.

Run: ``uvicorn baseline_app:app --app-dir bench`` with ``BASELINE_DB`` naming the file.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

_connection: sqlite3.Connection | None = None


def _open(path: str) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    conn.execute(
        "CREATE TABLE IF NOT EXISTS uploads "
        "(seq INTEGER PRIMARY KEY, name TEXT NOT NULL, body TEXT NOT NULL)"
    )
    return conn


async def upload_url(request: Request) -> Response:
    assert _connection is not None
    body = await request.body()
    document = json.loads(body)
    _connection.execute("BEGIN IMMEDIATE")
    _connection.execute(
        "INSERT INTO uploads (name, body) VALUES (?, ?)", (document["name"], body.decode())
    )
    _connection.execute("COMMIT")
    return Response(b'{"created":true}', status_code=201, media_type="application/json")


async def healthz(_: Request) -> Response:
    return Response(b'{"status":"ok"}', media_type="application/json")


@asynccontextmanager
async def lifespan(_: Starlette) -> AsyncIterator[None]:
    global _connection  # noqa: PLW0603 - one connection for the process, as the bench wants
    _connection = _open(os.environ["BASELINE_DB"])
    try:
        yield
    finally:
        _connection.close()


app = Starlette(
    routes=[
        Route("/api/v1/tracesets/upload-url", upload_url, methods=["POST"]),
        Route("/healthz", healthz),
    ],
    lifespan=lifespan,
)
