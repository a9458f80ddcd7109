"""A database at the newest migration opens without Alembic; the head is Alembic's own."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from alembic.config import Config
from alembic.script import ScriptDirectory

from tracesets.db import engine
from tracesets.db.engine import Database, head_revision, sqlite_url


def test_head_revision_is_alembics_head() -> None:
    config = Config()
    config.set_main_option("script_location", str(Path(engine.__file__).with_name("migrations")))
    assert head_revision() == ScriptDirectory.from_config(config).get_current_head()


def test_a_migrated_database_opens_without_importing_alembic(tmp_path: Path) -> None:
    url = sqlite_url(tmp_path)
    Database(url).migrate()
    script = (
        "import sys; from tracesets.db.engine import Database; "
        f"Database({url!r}).migrate(); "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('alembic', 'mako')))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120
    )
    assert done.stdout.strip() == "[]"


def test_a_new_database_is_migrated_to_the_head(tmp_path: Path) -> None:
    db = Database(sqlite_url(tmp_path))
    assert db._revision() is None
    db.migrate()
    assert db._revision() == head_revision()
    db.dispose()
