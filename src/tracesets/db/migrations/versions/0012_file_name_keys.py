"""Each file's name key, unique in its traceset: names one file on some disk, one row.

``name_key`` is ``filenames.same_name_key(name)``: names equal once Unicode-normalized
(NFC) and case-folded share it. The unique index on (traceset, key) makes two requests
that add ``A.json`` and ``a.json`` at once unable both to succeed, on every backend, and
finds the files in a folder (a range of keys) for the check that no name is both a file
and a folder. Files stored before this revision get their key, except a later file whose
key an earlier one of its traceset took already: it keeps none (its name still downloads
and serves as before, and later declarations are compared with the earlier file).

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from tracesets.filenames import same_name_key

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

_PAGE = 50_000


def upgrade() -> None:
    op.add_column(
        "files",
        sa.Column(
            "name_key",
            sa.Text().with_variant(sa.Text(collation="C"), "postgresql"),
            nullable=True,
        ),
    )
    conn = op.get_bind()
    page = sa.text(
        "SELECT traceset_seq, idx, name FROM files WHERE (traceset_seq, idx) > (:seq, :idx) "
        "ORDER BY traceset_seq, idx LIMIT :page"
    )
    keyed = sa.text("UPDATE files SET name_key = :key WHERE traceset_seq = :seq AND idx = :idx")
    seq, idx, seen = -1, -1, set[tuple[int, str]]()
    while rows := conn.execute(page, {"seq": seq, "idx": idx, "page": _PAGE}).all():
        updates = []
        for seq, idx, name in rows:
            key = same_name_key(name)
            if (seq, key) not in seen:
                seen.add((seq, key))
                updates.append({"key": key, "seq": seq, "idx": idx})
        if updates:
            conn.execute(keyed, updates)
        seen = {(s, k) for s, k in seen if s == seq}  # rows come by traceset: keep the last
    op.create_index(
        "ux_files_traceset_seq_name_key", "files", ["traceset_seq", "name_key"], unique=True
    )


def downgrade() -> None:
    op.drop_index("ux_files_traceset_seq_name_key", "files")
    with op.batch_alter_table("files") as batch:
        batch.drop_column("name_key")
