"""File names inside a traceset: what makes one unsafe, and when two are one file.

A traceset's files are downloaded to disks the service never sees (macOS, Windows,
Linux), so a name is checked for what it would do there: escape the folder, show as
another, or land on the path of another name. The service, the client and the CLI call
these before anything is stored or sent.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Final

MAX_FILE_NAME_BYTES: Final = 1_024
#: A Windows drive: ``C:x`` is ``x`` in drive C's current folder, ``C:/x`` its root.
_DRIVE: Final = re.compile(r"[A-Za-z]:")
#: The most bytes of a name's ``same_name_key``: case folding and NFC lengthen a few
#: characters (U+1D160, 4 bytes, folds to 12), and the key is indexed (PostgreSQL's B-tree
#: entries hold about 2,700 bytes).
MAX_NAME_KEY_BYTES: Final = 2 * MAX_FILE_NAME_BYTES
#: The explicit bidirectional formatting characters: embeddings, overrides, isolates and
#: marks. They reorder or re-direct the text around them, so a name shows other than it is.
BIDI_CONTROLS: Final = frozenset(
    "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
)
#: Format characters (category Cf) a name may hold: zero-width non-joiner and joiner,
#: part of the correct spelling of Persian and Indic words and of emoji sequences.
KEPT_FORMAT_CHARACTERS: Final = frozenset("\u200c\u200d")


def file_name_problem(name: str) -> str | None:
    """Why ``name`` is not a safe relative path inside a traceset, or None."""
    if not name:
        return "must not be empty"
    if len(name.encode("utf-8", "surrogatepass")) > MAX_FILE_NAME_BYTES:
        return f"must be at most {MAX_FILE_NAME_BYTES:,} bytes"
    if "\x00" in name:
        return "must not contain a NUL character"
    if "\\" in name:
        return "must not contain a backslash; use / between folders"
    if name.startswith("/"):
        return "must be a relative path (no leading /)"
    # Names are stored as given, so each file has one spelling: a/./b, a//b, a/b/ and a/b
    # would be one path on disk, and one download would overwrite the other.
    segments = name.split("/")
    if ".." in segments:
        return "must not contain a .. segment"
    if "." in segments:
        return "must not contain a . segment (a/./b is a/b: write it so)"
    if "" in segments:
        return "must not contain an empty segment (a//b is a/b: write it so; no trailing /)"
    if _DRIVE.match(name):
        return "must not start with a drive such as C: (on Windows it leaves the folder saved to)"
    if not is_unicode(name):
        return "must be valid Unicode (no lone surrogates)"
    if (unsafe := _unsafe_character(name)) is not None:
        return unsafe
    if not name.isascii() and len(same_name_key(name).encode()) > MAX_NAME_KEY_BYTES:
        return (
            f"must be at most {MAX_NAME_KEY_BYTES:,} bytes once Unicode-normalized and "
            "case-folded, the form names are compared in"
        )
    return None


def _unsafe_character(name: str) -> str | None:
    """Why a character of ``name`` makes it unsafe to show, type or save as a file, or None.

    Refused: controls (C0 with line breaks and tabs, DEL, C1), which break lines, logs,
    URLs and terminals; the bidirectional formatting characters, which make a name
    display as another; and every other invisible format character (category Cf: soft
    hyphen, zero-width space, word joiner, byte-order mark, tags…) and the line and
    paragraph separators (Zl, Zp), which make two names that look alike differ. Kept:
    zero-width non-joiner and joiner (``KEPT_FORMAT_CHARACTERS``).

    Every refused character is one ``str.isprintable`` refuses (Unicode's "Other" and
    "Separator" categories, the space aside), so a printable name, nearly every name, is
    passed in one call instead of a look at each character (19 µs for a 40-character
    name, each of the 4,000 files of an add-files request).
    """
    if name.isprintable():
        return None
    for position, char in enumerate(name, start=1):
        category = unicodedata.category(char)
        where = f"U+{ord(char):04X} at character {position:,}"
        if category == "Cc":
            return f"must not contain control characters (line breaks, tabs, DEL…); {where} is one"
        if char in BIDI_CONTROLS:
            return (
                "must not contain bidirectional formatting characters, which make a name "
                f"display as another; {where} is one"
            )
        if (category == "Cf" and char not in KEPT_FORMAT_CHARACTERS) or category in ("Zl", "Zp"):
            return f"must not contain invisible formatting characters; {where} is one"
    return None


def same_name_key(name: str) -> str:
    """The key two names share when they would be one file on some disk.

    Names equal after Unicode canonical normalization (NFC and NFD ``café``) are one name
    everywhere (macOS stores one form). Names that differ only in case (``Rank0.json``,
    ``rank0.json``) are one file on the default file systems of macOS and Windows: one
    download would overwrite the other. Caseless matching as Unicode defines it.
    """
    if name.isascii():  # NFC leaves ASCII as it is, and casefolds it as lower() does
        return name.lower()
    return unicodedata.normalize("NFC", unicodedata.normalize("NFC", name).casefold())


def folders_of(key: str) -> list[str]:
    """The folders a name (or its key) lies in, outermost first: ``a/b/c`` lies in ``a``
    and ``a/b``."""
    return [key[:at] for at, char in enumerate(key) if char == "/"]


def is_unicode(text: str) -> bool:
    """False for strings holding lone surrogates (JSON allows ``"\\ud800"``; UTF-8 does not)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def file_and_folder(file: str, index: int, inside: str) -> str:
    """Why a name (``file``, already shown) cannot be a file: ``files[index]``, ``inside``,
    lies in a folder of that name (up to case and NFC)."""
    return (
        f'{file} would be a file and the folder of files[{index}].name "{inside}": '
        "a name cannot be both"
    )


def repeated_name(index: int, name: str, first: int, first_name: str) -> str:
    at = f'files[{index}].name "{name}"'
    if name == first_name:
        return f"{at} is listed twice"
    if unicodedata.normalize("NFC", name) == unicodedata.normalize("NFC", first_name):
        return (
            f'{at} is the same name as files[{first}].name "{first_name}" once Unicode-normalized'
            " (NFC)"
        )
    return (
        f'{at} differs only in case from files[{first}].name "{first_name}": the two would be '
        "one file on macOS and Windows"
    )
