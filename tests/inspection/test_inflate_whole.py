"""A small gzip file inflated in one call gives what the stepwise reader gives, or nothing.

``inflate_whole`` may answer only where ``GzipReader`` reads the stream to its end without
a complaint, and must then give the same bytes; everywhere else (truncated, corrupt, past
its limit) it answers None and the stepwise reader says why, as before.
"""

from __future__ import annotations

import gzip
import io

import pytest

from tracesets.inspection import decompress
from tracesets.inspection.decompress import inflate_whole, open_gzip

TEXT = b'{"traceEvents": [' + b", ".join(b'{"name": "k%d", "ts": %d}' % (i, i) for i in range(3000)) + b"]}"  # fmt: skip
ONE = gzip.compress(TEXT)
TWO = gzip.compress(TEXT[:1000]) + gzip.compress(TEXT[1000:])


def reserved(member: bytes, flag: int) -> bytes:
    """``member`` with ``flag`` set in its header's flag byte."""
    return member[:3] + bytes([member[3] | flag]) + member[4:]


def stepwise(data: bytes) -> bytes | str:
    try:
        return open_gzip(io.BytesIO(data)).read()
    except Exception as error:  # what the reader says is the answer here
        return f"{type(error).__name__}: {error}"


@pytest.mark.parametrize(
    "data",
    [
        ONE,
        TWO,
        ONE + b"\0" * 16,  # zero padding after the last member
        ONE + b"trailing bytes",
        ONE + b"\x1f",
        gzip.compress(b""),
    ],
    ids=["one", "two members", "padding", "trailing", "half a magic", "empty"],
)
def test_a_clean_stream_is_inflated_as_the_reader_inflates_it(data: bytes) -> None:
    assert inflate_whole(data) == stepwise(data)


@pytest.mark.parametrize(
    "data",
    [
        ONE[: len(ONE) // 2],  # cut short
        ONE[:-4],  # no length in the trailer
        ONE[:-8] + bytes([ONE[-8] ^ 1]) + ONE[-7:],  # a wrong checksum
        ONE[:40] + bytes(b ^ 0x55 for b in ONE[40:104]) + ONE[104:],  # corrupt
        ONE + gzip.compress(TEXT)[:-8],  # a second member cut short
        reserved(ONE, 0x20),  # a flag RFC 1952 reserves, which ISA-L alone would ignore
        ONE + reserved(ONE, 0x80),  # the same on a second member
        reserved(ONE, 0xFF),  # read by ISA-L alone as every optional field
    ],
    ids=[
        "cut",
        "no length",
        "checksum",
        "corrupt",
        "second cut",
        "reserved flag",
        "second reserved",
        "all flags",
    ],
)
def test_anything_else_is_left_to_the_reader(data: bytes) -> None:
    assert inflate_whole(data) is None
    assert isinstance(stepwise(data), str)  # the reader names what is wrong


@pytest.mark.parametrize("flag", [0x20, 0x40, 0x80])
def test_a_reserved_flag_is_corruption_wherever_the_member_starts(flag: int) -> None:
    said = f"Corrupt: reserved header flags set: {ONE[3] | flag:#04x}"
    assert stepwise(reserved(ONE, flag)) == said
    second = len(gzip.compress(TEXT[:1000]))
    assert stepwise(TWO[:second] + reserved(TWO[second:], flag)) == said


def test_past_its_limit_it_gives_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(decompress, "WHOLE_LIMIT", len(TEXT) - 1)
    assert inflate_whole(ONE) is None
    monkeypatch.setattr(decompress, "WHOLE_LIMIT", len(TEXT))
    assert inflate_whole(ONE) == TEXT
