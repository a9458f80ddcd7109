"""Uploads in flight, remembered on disk so that running the same upload again resumes it.

The key of an upload is a digest of where it goes and what it declares before any file
is read (the service's URL, the workspace's token, the name, each file's name, size and
role, the metadata): the client sends the first files while it reads the others, so it
remembers the upload before it knows every sha256. Running the same upload again after a
crash, a lost connection or expired URLs therefore finds the traceset it had started and
sends only what has not arrived; the rerun hashes every file first, and a file whose
bytes differ from those declared for it makes it a new upload. The file is small JSON, one entry
per unfinished upload, written atomically; a finished upload removes its entry.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from tracesets import jsontext


def default_path() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "tracesets" / "uploads.json"


def fingerprint(url: str, token: str | None, body: dict[str, Any]) -> str:
    """The same for the same upload to the same place, different for any other."""
    token_digest = hashlib.sha256((token or "").encode()).hexdigest()
    digest = hashlib.sha256(f"{url}\n{token_digest}\n".encode())
    digest.update(jsontext.dumps(body))  # numbers as written: 0.10 stays 0.10
    return digest.hexdigest()


class UploadState:
    def __init__(self, path: Path | None = None) -> None:
        self.path = path or default_path()

    def _read(self) -> dict[str, str]:
        try:
            entries = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return {}  # no file yet, or one we cannot read: nothing to resume
        return {k: v for k, v in entries.items() if isinstance(k, str) and isinstance(v, str)}

    def _write(self, entries: dict[str, str]) -> None:
        with contextlib.suppress(OSError):  # a read-only home only loses the resume
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, draft = tempfile.mkstemp(dir=self.path.parent, prefix=".uploads-")
            with os.fdopen(fd, "w") as out:
                json.dump(entries, out)
            os.replace(draft, self.path)

    def started(self, key: str) -> str | None:
        """The traceset an earlier run of this upload started, if it did not finish."""
        return self._read().get(key)

    def remember(self, key: str, traceset_id: str) -> None:
        entries = self._read()
        entries[key] = traceset_id
        self._write(entries)

    def forget(self, key: str) -> None:
        entries = self._read()
        if entries.pop(key, None) is not None:
            self._write(entries)
