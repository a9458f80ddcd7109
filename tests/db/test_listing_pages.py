"""Filtered pages, followed to the end, hold exactly the matching tracesets, newest first,
however the filters combine and however rare their matches are past the lead filter's
batches of candidates."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import insert

from tracesets.db.engine import Database
from tracesets.db.listing import list_tracesets
from tracesets.db.tables import tracesets
from tracesets.vocabulary import ListFilter

WHEN = datetime(2026, 12, 1, 11, 22, 33, tzinfo=UTC)
ROWS = 700  # past three batches of candidates at the smallest batch (200)
FAMILIES = ("llama", "gpt", "mixtral")
NAMES = ("a", "b")
RANKS = (8, 16)
STATUSES = ("pending", "ready")


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Database]:
    folder: Path = tmp_path_factory.mktemp("listing")
    database = Database(f"sqlite:///{folder / 'l.db'}")
    database.migrate()
    draw = random.Random(7)
    rows = []
    for i in range(ROWS):
        # A rare family late in the list and clustered ones early, so matches can be sparse.
        family = "rare" if i % 97 == 0 else draw.choice(FAMILIES)
        ranks = draw.choice(RANKS)
        metadata = {
            "shape": {"rankCount": ranks},
            "workload_family": family,
            "workload_name": draw.choice(NAMES),
        }
        rows.append(
            {
                "id": f"t{i:04d}",
                "workspace": "w" if i % 5 else "other",
                "name": "n",
                "status": draw.choice(STATUSES),
                "created_at": WHEN,
                "updated_at": WHEN,
                "workload_metadata": json.dumps(metadata),
                "rank_count": ranks,
            }
        )
    with database.write() as conn:
        conn.execute(insert(tracesets), rows)
    yield database
    database.dispose()


def every_page(db: Database, where: ListFilter, limit: int) -> list[str]:
    seen: list[str] = []
    before: int | None = None
    while True:
        with db.read() as conn:
            page = list_tracesets(
                conn, workspace="w", where=where, limit=limit + 1, before_seq=before
            )
        seen += [item.id for item in page[:limit]]
        if len(page) <= limit:
            return seen
        before = page[limit - 1].seq


def expected(db: Database, where: ListFilter) -> list[str]:
    with db.read() as conn:
        rows = conn.execute(tracesets.select().order_by(tracesets.c.seq.desc())).all()
    asked = where.given()
    return [
        row.id
        for row in rows
        if row.workspace == "w"
        and all(getattr(row, name) == value for name, value in asked.items())
    ]


@settings(max_examples=40, deadline=None)
@given(
    family=st.sampled_from((None, "rare", *FAMILIES)),
    name=st.sampled_from((None, *NAMES)),
    ranks=st.sampled_from((None, *RANKS)),
    status=st.sampled_from((None, *STATUSES)),
    limit=st.sampled_from((1, 3, 20, 50)),
)
def test_every_page_followed_holds_exactly_the_matches_newest_first(
    db: Database,
    family: str | None,
    name: str | None,
    ranks: int | None,
    status: str | None,
    limit: int,
) -> None:
    where = ListFilter(
        workload_family=family,
        workload_name=name,
        rank_count=ranks,
        status=status,  # type: ignore[arg-type]
    )
    assert every_page(db, where, limit) == expected(db, where)
