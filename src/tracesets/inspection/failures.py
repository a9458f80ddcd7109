"""Why bytes could not be read, in plain words, whatever raised.

Inspection reads uploads, so any exception from the inflaters (ISA-L's for gzip, zlib's
within zip archives), zipfile, tarfile or the scanner is a fact about the upload, never a
crash: it becomes a finding's ``problem``. Only ``SourceError`` (the storage failed, not
the bytes) is let through.
"""

from __future__ import annotations

import tarfile
import zipfile
import zlib

from isal import isal_zlib

from tracesets.inspection.budget import OverBudget
from tracesets.inspection.decompress import Corrupt, Refused, Truncated
from tracesets.inspection.jsonscan import ValueUnreadable


def describe(error: BaseException) -> str:
    """An exception raised while reading bad bytes, as a sentence fragment."""
    if isinstance(error, Refused | Truncated | OverBudget):
        return str(error)
    if isinstance(error, zlib.error | isal_zlib.error | Corrupt):
        return f"the compressed data is corrupt ({error})"
    if isinstance(error, EOFError):
        return "the compressed data stops before its end"
    if isinstance(error, zipfile.BadZipFile):
        return f"not a readable zip archive ({error})"
    if isinstance(error, tarfile.TarError):
        return f"not a readable tar archive ({error})"
    if isinstance(error, ValueUnreadable):
        return f"its metadata could not be decoded: {error}"
    if isinstance(error, NotImplementedError):
        return f"compressed in a way Tracesets cannot read ({error})"
    return f"could not be read ({type(error).__name__}: {error})"
