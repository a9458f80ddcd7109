"""Zip and tar archives of traces, read member by member; bombs refused."""

from __future__ import annotations

import gzip
import io
import tarfile
import zipfile
from collections.abc import Iterable

from tests.inspection.kineto_writer import gzipped, kineto_trace
from tracesets.inspection import BytesSource, FileFinding, inspect_file, summarize
from tracesets.inspection.decompress import BOMB_FLOOR

MIB = 1 << 20


def zipped(
    members: Iterable[tuple[str, bytes]], *, compression: int = zipfile.ZIP_DEFLATED
) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=compression) as archive:
        for name, data in members:
            archive.writestr(name, data)
    return out.getvalue()


def tarred(members: Iterable[tuple[str, bytes]], *, mode: str = "w") -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode=mode) as archive:  # type: ignore[call-overload]
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return out.getvalue()


def ranks_of(findings: list[FileFinding]) -> list[int | None]:
    return [finding.rank for finding in findings]


def eight_ranks(layout: str = "header") -> list[tuple[str, bytes]]:
    return [
        (f"traces/rank{r}.json", kineto_trace(r, 16, layout=layout, events=50)) for r in range(8)
    ]


def test_a_zip_of_8_traces_declaring_16_ranks_names_the_8_missing() -> None:
    findings = inspect_file("traces.zip", BytesSource(zipped(eight_ranks())))
    assert [f.member for f in findings] == [f"traces/rank{r}.json" for r in range(8)]
    assert {f.file for f in findings} == {"traces.zip"}
    assert ranks_of(findings) == list(range(8))
    summary = summarize(findings, declared_rank_count=16)
    assert summary.ranks_found == list(range(8))
    assert summary.world_size == 16
    assert summary.missing_ranks == list(range(8, 16))
    assert summary.missing_rank_count == 8
    assert summary.warnings == ["8 of 16 declared ranks have no trace: 8-15."]


def test_stored_and_deflated_zips_and_gzip_members() -> None:
    members = [(name, gzipped(data)) for name, data in eight_ranks("tail")]
    for data in (
        zipped(eight_ranks("tail"), compression=zipfile.ZIP_STORED),
        zipped(eight_ranks("tail"), compression=zipfile.ZIP_DEFLATED),
        zipped(members, compression=zipfile.ZIP_STORED),
        zipped(members, compression=zipfile.ZIP_DEFLATED),
    ):
        findings = inspect_file("traces.zip", BytesSource(data))
        assert ranks_of(findings) == list(range(8))
        assert {f.rank_source for f in findings} == {"tail"}


def test_member_size_is_its_uncompressed_size() -> None:
    trace = kineto_trace(0, 1)
    (finding,) = inspect_file("t.zip", BytesSource(zipped([("rank0.json", trace)])))
    assert finding.size == len(trace)
    assert finding.format == "kineto-json"


def test_tar_and_tar_gz() -> None:
    for mode, name in (("w", "traces.tar"), ("w:gz", "traces.tar.gz"), ("w:gz", "traces.tgz")):
        for layout in ("header", "tail"):
            data = tarred(eight_ranks(layout), mode=mode)
            findings = inspect_file(name, BytesSource(data))
            assert ranks_of(findings) == list(range(8)), (name, layout)
            assert [f.member for f in findings] == [f"traces/rank{r}.json" for r in range(8)]


def test_a_tar_of_gzip_traces() -> None:
    data = tarred([(f"rank{r}.json.gz", gzipped(kineto_trace(r, 8))) for r in range(3)])
    findings = inspect_file("t.tar", BytesSource(data))
    assert [(f.rank, f.format) for f in findings] == [(r, "kineto-json-gzip") for r in range(3)]


def test_duplicated_ranks_are_named_with_their_files() -> None:
    members = [
        *eight_ranks(),
        ("again/rank3.json", kineto_trace(3, 16)),
        ("x.json", kineto_trace(3, 16)),
    ]
    summary = summarize(inspect_file("t.zip", BytesSource(zipped(members))), declared_rank_count=8)
    assert summary.duplicate_ranks == [3]
    assert (
        "Rank 3 has 3 traces: t.zip!traces/rank3.json, t.zip!again/rank3.json, t.zip!x.json."
        in summary.warnings
    )
    assert "10 traces say the world size is 16, but the workload metadata declares 8 ranks." in (
        summary.warnings
    )


def test_directories_and_mac_resource_forks_are_not_traces() -> None:
    members = [
        ("__MACOSX/._rank0.json", b"\x00\x05\x16\x07"),
        ("._rank1.json", b"junk"),
        *eight_ranks()[:2],
    ]
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.mkdir("traces")
        for name, data in members:
            archive.writestr(name, data)
    assert ranks_of(inspect_file("t.zip", BytesSource(out.getvalue()))) == [0, 1]


def test_a_zip_bomb_member_is_refused_unread() -> None:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        info = zipfile.ZipInfo("rank1.json")
        info.compress_type = zipfile.ZIP_DEFLATED
        with archive.open(info, "w", force_zip64=True) as member:
            block = b" " * MIB
            for _ in range(BOMB_FLOOR // MIB + 16):
                member.write(block)
        archive.writestr("rank0.json", kineto_trace(0, 2))
    findings = inspect_file("bomb.zip", BytesSource(out.getvalue()))
    assert [(f.member, f.rank, f.readable) for f in findings] == [
        ("rank1.json", None, False),
        ("rank0.json", 0, True),
    ]
    assert (findings[0].problem or "").startswith("refused: ")
    summary = summarize(findings, declared_rank_count=2)
    assert summary.unreadable == ["bomb.zip!rank1.json"]


def test_a_gzip_bomb_is_refused_part_way() -> None:
    out = io.BytesIO()
    with gzip.GzipFile(fileobj=out, mode="wb", compresslevel=9) as bomb:
        bomb.write(b'{"schemaVersion": 1, "traceEvents": [')
        for _ in range(BOMB_FLOOR // MIB + 16):
            bomb.write(b" " * MIB)
        bomb.write(b'], "distributedInfo": {"rank": 0, "world_size": 1}}')
    (finding,) = inspect_file("rank0.json.gz", BytesSource(out.getvalue()))
    assert finding.format == "kineto-json-gzip"
    assert not finding.readable and finding.rank is None
    assert (finding.problem or "").startswith("refused: ")


def test_an_archive_may_not_unfold_past_its_ratio_in_all_its_members_together() -> None:
    filler = b'{"traceEvents": [' + b" " * (10 * MIB) + b"]}"
    data = zipped((f"part{n}.json", filler) for n in range(10))
    findings = inspect_file("many.zip", BytesSource(data))
    read = [f for f in findings if f.readable]
    refused = [f for f in findings if (f.problem or "").startswith("refused")]
    assert 1 < len(read) < 10 and len(read) + len(refused) == 10
    assert findings[0].problem is not None and "no distributedInfo" in findings[0].problem


def test_encrypted_members_are_not_opened() -> None:
    data = bytearray(zipped([("rank0.json", kineto_trace(0, 1))]))
    for signature, flags_at in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):  # local, central
        at = data.index(signature) + flags_at
        data[at] |= 0x1  # "encrypted", as zipfile itself cannot write it
    (finding,) = inspect_file("locked.zip", BytesSource(bytes(data)))
    assert (finding.problem, finding.readable) == ("the member is encrypted", False)


def test_archives_inside_archives_are_not_opened() -> None:
    inner = zipped(eight_ranks()[:1])
    data = zipped([("inner.zip", inner), ("inner.tar.gz", tarred(eight_ranks()[:1], mode="w:gz"))])
    findings = inspect_file("outer.zip", BytesSource(data))
    assert [(f.member, f.problem) for f in findings] == [
        ("inner.zip", "an archive inside an archive is not opened"),
        ("inner.tar.gz", "an archive inside an archive is not opened"),
    ]


def test_broken_archives_keep_what_was_read() -> None:
    whole = tarred(eight_ranks(), mode="w:gz")
    findings = inspect_file("cut.tar.gz", BytesSource(whole[: len(whole) * 2 // 3]))
    *members, archive = findings
    assert archive.member is None and not archive.readable
    assert (archive.problem or "").startswith("could not be read past its first members")
    read = [f for f in members if f.readable]
    assert ranks_of(read) == list(range(len(read))) and len(read) >= 2

    zip_data = zipped(eight_ranks())
    (cut,) = inspect_file("cut.zip", BytesSource(zip_data[: len(zip_data) // 2]))
    assert not cut.readable and (cut.problem or "").startswith("could not be read as an archive")


def test_an_empty_archive_says_so() -> None:
    (finding,) = inspect_file("empty.zip", BytesSource(zipped([])))
    assert (finding.problem, finding.readable) == ("the archive holds no files", False)
